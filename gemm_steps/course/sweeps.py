"""Tuning sweeps and experiments as tables: each configuration or variant of one run, side by side."""

from __future__ import annotations

from typing import Iterable

from .display import MarkdownTable, StepLike, as_step

_CONFIG_FIELDS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "THREAD_M", "THREAD_N", "MIN_BLOCKS_PER_SM")


def config_label(config: dict) -> str:
    """``128×128×16, 8×8/thread, ≥2 blocks/SM``: a tile configuration in one short line."""
    hint = f", ≥{config['MIN_BLOCKS_PER_SM']} blocks/SM" if config.get("MIN_BLOCKS_PER_SM") else ""
    return (f"{config['BLOCK_M']}×{config['BLOCK_N']}×{config['BLOCK_K']}, "
            f"{config['THREAD_M']}×{config['THREAD_N']}/thread{hint}")


def same_config(a: dict, b: dict) -> bool:
    """Whether two configuration dicts name the same tiles (fields a record lacks count as 0)."""
    return all(a.get(key, 0) == b.get(key, 0) for key in _CONFIG_FIELDS)


def sweep_records(sweep: dict) -> list[dict]:
    """The successful records of a tuning sweep (``step#i``, each with its ``config``), in the sweep's order."""
    return [r for r in sweep["records"] if r["step"] != "cublas" and "error" not in r
            and r.get("median_ms") is not None and "config" in r]


def sweep_table(sweep: dict, step: StepLike) -> MarkdownTable:
    """A tuning sweep as a table: each configuration's time, % of cuBLAS and first call (compile + one run), the
    one :func:`gemm_steps.harness.tuning.choose_best` picks, and where it stands in the step's ``SEARCH_SPACE``
    today."""
    from gemm_steps.harness.tuning import choose_best
    from gemm_steps.toolkit.tile_config import tile_fields

    space = [tile_fields(config) for config in getattr(as_step(step).module, "SEARCH_SPACE", [])]
    records = sweep_records(sweep)
    best = choose_best(records) if records else None
    lines = ["| sweep # | block tile M×N×K, per thread, occupancy hint | median ms | % of cuBLAS | first call s "
             "| # in SEARCH_SPACE now |", "|--:|:--|--:|--:|--:|--:|"]
    for r in records:
        place = next((i + 1 for i, other in enumerate(space) if same_config(r["config"], other)), "—")
        chosen = " **← chosen**" if r is best else ""
        lines.append(f"| {r['number']} | {config_label(r['config'])}{chosen} | {r['median_ms']:.3f} "
                     f"| {r.get('pct_of_cublas', float('nan')):.1f} % | {r['first_call_s']:.1f} | {place} |")
    return MarkdownTable("\n".join(lines))


def variants_table(experiment: dict, first_column: str = "kernel", only: Iterable[str] | None = None,
                   base: str | None = None) -> MarkdownTable:
    """An experiment's variants (``bench.time_variants``, or any one-run comparison of square sizes) as a table: one
    row per variant in the order they ran, one column of % of cuBLAS per size. ``only`` picks and orders the rows;
    ``base`` (a variant) adds a column per size of how much faster each ran than it (its time / the variant's)."""
    by = {(r["step"], r["M"]): r for r in experiment["records"] if "error" not in r}
    sizes = sorted({m for _, m in by})
    names = list(only) if only is not None else list(dict.fromkeys(
        r["step"] for r in experiment["records"] if r["step"] != "cublas"))
    columns = [(m, None) for m in sizes] + ([(m, base) for m in sizes] if base else [])
    lines = [f"| {first_column} | " + " | ".join(f"{m}³: × {base}" if b else f"{m}³: % of cuBLAS" for m, b in columns)
             + " |", "|:--|" + "--:|" * len(columns)]
    lines += [f"| {name} | " + " | ".join(
        "—" if (name, m) not in by or (b and (b, m) not in by) else f"{by[(name, m)]['pct_of_cublas']:.1f} %"
        if b is None else f"{by[(b, m)]['median_ms'] / by[(name, m)]['median_ms']:.3f}×" for m, b in columns) + " |"
        for name in names]
    return MarkdownTable("\n".join(lines))
