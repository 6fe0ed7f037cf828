"""Checking a step in a lesson: run it on random inputs and compare with NumPy in float64."""

from __future__ import annotations

from typing import Iterable

from .display import MarkdownTable, StepLike, as_step

Size = tuple[int, int, int]


def check_against_numpy(step: StepLike, shapes: Iterable[Size], seed: int = 0) -> MarkdownTable:
    """Check ``step`` against a float64 NumPy product at each (M, N, K), with :func:`gemm_steps.harness.verify.verify`.

    The output starts as NaN on the device, so an element the kernel forgets to write shows up. Returns the table;
    raises ``AssertionError`` (with the table) if any shape fails, so a wrong kernel stops the notebook.
    """
    from gemm_steps.harness.verify import verify

    step = as_step(step)
    lines = ["| M × N × K | unwritten | relative error vs float64 | tolerance | ok | seconds |",
             "|:----------|----------:|--------------------------:|----------:|:---|--------:|"]
    rows = verify([step], shapes, seed=seed)
    if rows and rows[0].get("skipped"):  # this GPU cannot run the step: say why instead of a table
        return MarkdownTable(f"Not checked here: {rows[0]['skipped']}.")
    for r in rows:
        ok = "yes" if r["passed"] else f"**NO** {r.get('error', '')}"
        lines.append(f"| {r['M']} × {r['N']} × {r['K']} | {r['nan_count']} | {r['rel_error']:.2e} "
                     f"| {r['tolerance']:.1e} | {ok} | {r['seconds']:.2f} |")
    table = MarkdownTable(f"Step {step.number} ({step.name}) against NumPy in float64:\n\n" + "\n".join(lines))
    if not all(r["passed"] for r in rows):
        raise AssertionError(f"step {step.name} fails the check against NumPy:\n{table}")
    return table
