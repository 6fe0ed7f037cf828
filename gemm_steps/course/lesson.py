"""Everything a lesson uses, under one name: ``from gemm_steps.course import lesson``.

The helpers live in short modules by job; this module only gathers them, so that a lesson's cells stay short:

* :mod:`.display` — prose, code and figures: ``say``, ``show_source``, ``show_kernel``, ``show_excerpt``,
  ``show_diff``, ``show_file``, ``show_figure``;
* :mod:`.checks` — ``check_against_numpy``;
* :mod:`.timings` — where timings come from and how to read them: ``measure_or_load``, ``load_shipped``,
  ``shipped_file``, ``record``, ``headline_size``, ``timing_table`` …;
* :mod:`.sweeps` — tuning sweeps and experiments as tables: ``sweep_table``, ``variants_table`` …;
* :mod:`.compiled` — the compiled code, on a CPU: ``compile_kernels``, ``compiled_table``, ``k_loop_mix``,
  ``register_table`` (registers by compiler),
  ``blocks_per_sm`` …;
* :mod:`.models` — the throughput models the predictions use: ``wavefronts``, ``sm_rate_tflops``,
  ``ceiling_figure``;
* :mod:`.profiles` — what Nsight Compute says about a step, from the shipped reports: ``show_profile``,
  ``load_profile``.
"""

from .checks import check_against_numpy
from .compiled import (MIX_CLASSES, SM90_LIMITS, blocks_per_sm, compile_kernels, compile_with_registers,
                       compiled_table, fmas_per_k_tile, k_loop_mix, register_table, threads_per_block)
from .display import (MarkdownTable, excerpt, facts, kernel_diff, say, show_code, show_diff, show_excerpt,
                      show_file, show_figure, show_kernel, show_source)
from .models import BANKS, ceiling_figure, sm_rate_tflops, wavefronts
from .profiles import load as load_profile
from .profiles import show as show_profile
from .sweeps import config_label, same_config, sweep_records, sweep_table, variants_table
from .timings import (NO_RESULTS, common_sizes, datasheet_bandwidth_tbs, fp32_peak_tflops, headline_size,
                      load_results, load_shipped, measure_or_load, record, shipped_file, shown_path, size_label,
                      speedups_by_size, timing_table)

__all__ = [
    "check_against_numpy",
    "MIX_CLASSES", "SM90_LIMITS", "blocks_per_sm", "compile_kernels", "compile_with_registers", "compiled_table",
    "fmas_per_k_tile", "k_loop_mix", "register_table", "threads_per_block",
    "MarkdownTable", "excerpt", "facts", "kernel_diff", "say", "show_code", "show_diff", "show_excerpt",
    "show_file", "show_figure", "show_kernel", "show_source",
    "BANKS", "ceiling_figure", "sm_rate_tflops", "wavefronts",
    "load_profile", "show_profile",
    "config_label", "same_config", "sweep_records", "sweep_table", "variants_table",
    "NO_RESULTS", "common_sizes", "datasheet_bandwidth_tbs", "fp32_peak_tflops", "headline_size", "load_results",
    "load_shipped", "measure_or_load", "record", "shipped_file", "shown_path", "size_label", "speedups_by_size",
    "timing_table",
]
