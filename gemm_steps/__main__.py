"""``python -m gemm_steps`` is the ``gemm-steps`` command (see :mod:`gemm_steps.cli`)."""

from .course.cli import main

raise SystemExit(main())
