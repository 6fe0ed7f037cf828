"""Numbers that docs quote come from the files they cite (issue 26, claim 12; STYLE.md: "where a docstring quotes
one, a test compares it with its source"). The step docstrings of steps 12-20 and docs/tensor_cores.md quote the
course benchmark in one sentence each, which this test rebuilds from the shipped file; any other measured-looking
number (TFLOPS, ×, %, an error like 3.2e-7) in them fails the test, so a hand-typed number cannot drift unseen."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import gemm_steps
from gemm_steps.course import lesson
from gemm_steps.course.timings import record
from gemm_steps.harness import results_files

REPO = Path(__file__).resolve().parent.parent
#: A measured-looking number: TFLOPS, a ratio (× not followed by a dimension: 16×8, 512×K), a percentage, or an
#: error in e-notation.
MEASURED = re.compile(r"\d+(?:\.\d+)?\s*(?:TFLOPS|%|×(?!\s*[\dA-Z_]))|\d\.\d+e-\d")
#: Facts of the hardware and formats the texts may state (not measurements).
FACTS = ("8× more multiply-adds", "8× the FP32", "64 ``mma.sync``'s worth")
#: The steps whose docstrings quote the course benchmark: every tensor-core step.
TENSOR_CORE_STEPS = ["tensor_cores", "three_tf32", "warpgroup_mma", "warpgroup_tf32", "tma_pipeline",
                     "warp_specialized", "warp_specialized_3xtf32", "pingpong", "cluster_multicast"]
#: A TF32 step on wgmma is compared with the TF32 step before it: step 15 with step 12, 16 with 15, 17 with 16, 19 and
#: 20 with 17.
COMPARED_WITH = {"warpgroup_tf32": "tensor_cores", "tma_pipeline": "warpgroup_tf32",
                 "warp_specialized": "tma_pipeline", "pingpong": "warp_specialized",
                 "cluster_multicast": "warp_specialized"}


@pytest.fixture(scope="module")
def bench():
    found = lesson.load_results(TENSOR_CORE_STEPS)
    if found is None:
        pytest.fail("no shipped course benchmark with steps 12-20 (renamed?)")
    return found


def measured(bench: dict, step: str) -> str:
    """The one sentence a step's docstring quotes from the benchmark, rebuilt from the file."""
    t4, t8 = (record(bench, step, s) for s in (4096, 8192))
    text = (f"Measured ({results_files.display_path(bench['path'])}): {t4['tflops']:.1f} TFLOPS at 4096³ and "
            f"{t8['tflops']:.1f} at 8192³")
    if step in ("three_tf32", "warpgroup_mma", "warp_specialized_3xtf32"):
        text += f", {t4['pct_of_cublas'] / 100:.2f}× and {t8['pct_of_cublas'] / 100:.2f}× cuBLAS SGEMM"
        s4, s8 = (record(bench, "cublas", s)["sampled_rel_error_fp64"] for s in (4096, 8192))
        text += (f", at a sampled error of {t4['sampled_rel_error_fp64']:.1e} and {t8['sampled_rel_error_fp64']:.1e} "
                 f"against SGEMM's {s4:.1e} and {s8:.1e}")
    if step in COMPARED_WITH:
        before = COMPARED_WITH[step]
        s4, s8 = (record(bench, before, s)["tflops"] for s in (4096, 8192))
        c4, c8 = (record(bench, "cublas_tf32", s)["tflops"] for s in (4096, 8192))
        text += (f": {t4['tflops'] / s4:.2f}× and {t8['tflops'] / s8:.2f}× step "
                 f"{gemm_steps.get_step(before).number}, "
                 f"{100 * t4['tflops'] / c4:.0f} % and {100 * t8['tflops'] / c8:.0f} % of cuBLAS TF32")
    return text + "."


def flatten(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def unverified(text: str, verified: list[str]) -> list[str]:
    """The measured-looking numbers of ``text`` outside the ``verified`` sentences and the stated facts."""
    text = flatten(text)
    for quote in verified + list(FACTS):
        text = text.replace(flatten(quote), "")
    return MEASURED.findall(text)


@pytest.mark.parametrize("step", TENSOR_CORE_STEPS)
def test_a_step_docstring_quotes_the_benchmark_as_it_is(bench, step):
    doc = gemm_steps.get_step(step).doc
    sentence = measured(bench, step)
    assert flatten(sentence) in flatten(doc), f"{step}'s docstring should say, from the file:\n{sentence}"
    assert not unverified(doc, [sentence]), f"{step}'s docstring has numbers no test checks: {unverified(doc, [sentence])}"


def docs_table(bench: dict) -> str:
    """docs/tensor_cores.md's table of steps 12-23 and both cuBLAS, rebuilt from the file."""
    rows = [("cublas", "cuBLAS SGEMM"), ("cublas_tf32", "cuBLAS TF32"), ("tensor_cores", "step 12, TF32 (`mma.sync`)"),
            ("three_tf32", "step 13, 3xTF32 (`mma.sync`)"), ("warpgroup_mma", "step 14, 3xTF32 (`wgmma`)"),
            ("warpgroup_tf32", "step 15, TF32 (`wgmma`)"), ("tma_pipeline", "step 16, TF32 (TMA, mbarrier ring)"),
            ("warp_specialized", "step 17, TF32 (producer warpgroup, `setmaxnreg`)"),
            ("warp_specialized_3xtf32", "step 18, 3xTF32 (producer warpgroup splits A)"),
            ("pingpong", "step 19, TF32 (persistent ping-pong)"),
            ("cluster_multicast", "step 20, TF32 (cluster of 2, A multicast)"),
            ("warp_specialized_stream_k", "step 21, TF32 (stream-K, persistent)"),
            ("warp_specialized_3xtf32_stream_k", "step 22, 3xTF32 (stream-K, persistent)"),
            ("cluster_stream_k_tma_store", "step 23, TF32 (step 21 on clusters of 2, TMA store)")]
    sizes = (2048, 4096, 8192)
    lines = ["| | " + " | ".join(f"{s}³" for s in sizes) + " | error at " + " / ".join(f"{s}³" for s in sizes) + " |",
             "|:--|" + "--:|" * (len(sizes) + 1)]
    for name, label in rows:
        found = [record(bench, name, s) for s in sizes]
        lines.append(f"| {label} | " + " | ".join(f"{r['tflops']:.1f} ({r['pct_of_cublas']:.0f} %)" for r in found)
                     + " | " + " / ".join(f"{r['sampled_rel_error_fp64']:.1e}" for r in found) + " |")
    return "\n".join(lines)


def test_docs_tensor_cores_quotes_the_benchmark_as_it_is(bench):
    text = (REPO / "docs" / "tensor_cores.md").read_text()
    table = docs_table(bench)
    assert table in text, f"docs/tensor_cores.md's table should be, from the file:\n{table}"
    assert results_files.display_path(bench["path"]) in text
    assert not unverified(text, [table]), f"docs/tensor_cores.md has numbers no test checks: {unverified(text, [table])}"
