"""The compiled code: every kernel of every step compiles to PTX, keeps everything in registers, and shows the
instructions its lesson claims.

Runs on a CPU-only machine: the kernels are compiled by NVVM (the ``nvidia-nvvm`` wheel that
``numba-cuda[cu13]`` installs) in the package's GPU-mode worker, a process started with ``NUMBA_ENABLE_CUDASIM=0``
— Numba in GPU mode, no GPU needed (:mod:`gemm_steps.harness.gpu_mode`). The first PTX test queues every job, and the
worker compiles job after job (``tests/ptx_jobs.py``); each test here waits only for its own step's. One test also
runs the package's own entry point, :func:`gemm_steps.harness.ptx.report_in_subprocess`, for a small step.

A step states what its PTX must contain with ``PTX_EXPECT`` in its module, checked here for every label::

    PTX_EXPECT = {"vectorized_fast": {"ld.global.v4.f32": ">=1", "st.global.v4.f32": ">=1", "local": 0}}

Values: an int (exactly), or a string ``"==N"``, ``">=N"``, ``"<=N"``, ``">N"``, ``"<N"``. Keys: any key of
:func:`gemm_steps.harness.ptx.ptx_stats` (``ld.global.v4.f32``, ``fma.rn.f32``, ``bar.sync``, ``local``, …).
"""

from __future__ import annotations

import pytest

import gemm_steps
from helpers import COMPARE as _COMPARE, parse_expectation
from gemm_steps.harness import gpu_mode
from gemm_steps.harness.ptx import ptx_stats, report_in_subprocess, wgmma_fence_violations

STEPS = gemm_steps.steps()


def _kernel_param(step, label):
    return pytest.param((step, label), id=f"{step.number}-{label}", marks=pytest.mark.ptx(step.name))


#: Every kernel of every step, by label (Step.kernel_labels: collecting does not generate the kernels, which would
#: take every xdist worker seconds; test_the_labels_are_the_kernels_the_step_builds checks the labels).
ALL_KERNELS = [_kernel_param(step, label) for step in STEPS for label in step.kernel_labels()]
STEP_PARAMS = [pytest.param(step, id=f"{step.number}-{step.name}", marks=pytest.mark.ptx(step.name)) for step in STEPS]


def _stats(ptx, step, label):
    stats = ptx.stats(step.name, label)
    assert "error" not in stats, f"{label} failed to compile: {stats['error']}"
    return stats


@pytest.mark.parametrize("step", STEP_PARAMS)
def test_the_labels_are_the_kernels_the_step_builds(ptx, step):
    """``Step.kernel_labels`` (what the tests are collected by) names exactly the kernels ``Step.kernels`` builds,
    in order: the GPU-mode worker built them for this step's job."""
    assert ptx.labels(step.name) == step.kernel_labels()


@pytest.mark.parametrize("entry", ALL_KERNELS)
def test_kernel_compiles_to_ptx(ptx, entry):
    step, label = entry
    stats = _stats(ptx, step, label)
    assert stats["instructions"] > 0
    products = (stats["fma.rn.f32"] + stats["mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"]
                + stats["wgmma.mma_async.tf32"])
    assert products >= 1, f"{label}: no single-precision FMA or tensor-core mma — is this the product kernel?"


@pytest.mark.parametrize("entry", ALL_KERNELS)
def test_no_local_memory(ptx, entry):
    """Every register array (accumulators, fragments) must live in registers: no .local, no ld/st.local."""
    step, label = entry
    stats = _stats(ptx, step, label)
    assert stats["local"] == 0, (f"{label} uses local memory: {stats['ld.local']} ld.local, {stats['st.local']} "
                                 f"st.local, {stats['local_decls']} .local declarations")


@pytest.mark.parametrize("entry", ALL_KERNELS)
def test_shared_memory_kernels_synchronise(ptx, entry):
    """A kernel that stages tiles in shared memory must have a barrier between writing and reading them."""
    step, label = entry
    stats = _stats(ptx, step, label)
    writes_shared = stats["st.shared.f32"] + stats["st.shared.v4.f32"] > 0
    assert not writes_shared or stats["bar.sync"] >= 1, f"{label} writes shared memory but never syncs"


@pytest.mark.ptx("coalesced", "kernels:ptx_jobs:coalesced_kernels")
def test_a_kernels_job_compiles_what_its_function_returns(ptx):
    """``kernels:module:function`` jobs (for kernels built outside the steps) give the same PTX stats as the step
    (what ptxas says is added to each as its tests need: ``ptxas`` for a kernels job, ``assembles`` for a step)."""
    step = gemm_steps.get_step("coalesced")

    def ptx_only(stats: dict) -> dict:
        return {key: value for key, value in stats.items() if key not in ("ptxas", "assembles")}

    for label in step.kernel_labels():
        from_job = ptx.stats("kernels:ptx_jobs:coalesced_kernels", label)
        assert "ptxas" in from_job and "assembles" in _stats(ptx, step, label)
        assert ptx_only(from_job) == ptx_only(_stats(ptx, step, label))


def test_report_in_subprocess_runs_the_package_entry_point():
    """The package's own way to get a report from a simulator process (``python -m gemm_steps.harness.ptx`` in
    GPU mode) works, and counts what the PTX jobs (tests/ptx_jobs.py) count."""
    step = STEPS[0]
    try:
        report = report_in_subprocess(steps=[step.name], timeout=600)
    except gpu_mode.GPUModeError as exc:  # only a missing NVVM skips; any other failure fails
        if "NVVM unavailable" in str(exc):
            pytest.skip(str(exc).strip().splitlines()[-1])
        raise
    assert set(report) == {step.name}, f"asked for {step.name}, got {sorted(report)}"
    assert set(report[step.name]) == set(step.kernels())
    for label, stats in report[step.name].items():
        assert "error" not in stats, f"{label}: {stats['error']}"
        assert stats["fma.rn.f32"] >= 1 and stats["instructions"] > 0


#: The keys a PTX_EXPECT may use: every count of ptx_stats.
KNOWN = set(ptx_stats("\tret;\n")) - {"opcodes"}


@pytest.mark.parametrize("step", STEP_PARAMS)
def test_ptx_expectations(ptx, step):
    """The step's own ``PTX_EXPECT`` claims (none declared: nothing to check beyond the tests above)."""
    check_claims(step, "PTX_EXPECT", lambda label: _stats(ptx, step, label), known=KNOWN)


@pytest.mark.parametrize("step", STEP_PARAMS)
def test_ptxas_expectations(ptx, step):
    """The step's ``PTXAS_EXPECT`` claims about what ``ptxas`` makes of its PTX (registers, spill bytes), checked on
    the ``ptxas`` inside the nvJitLink wheel for sm_90a; a claim whose assembler did not answer fails."""
    check_claims(step, "PTXAS_EXPECT", lambda label: _stats(ptx, step, label).get("ptxas") or {})


def check_claims(step, name: str, measured_of, known: set | None = None) -> None:
    """Fail, listing them, on the claims of ``step.module.<name>`` (``{label: {key: spec}}``) that the numbers
    ``measured_of(label)`` do not meet; ``known``: the keys a claim may use (any, if None)."""
    expect = getattr(step.module, name, {})
    unknown = set(expect) - set(step.kernel_labels())
    assert not unknown, f"{step.name}.{name} names kernels it does not have: {sorted(unknown)}"
    failures = []
    for label, wanted in expect.items():
        measured = measured_of(label)
        for key, spec in wanted.items():
            op, value = parse_expectation(spec)
            if known is not None and key not in known:
                failures.append(f"{label}: unknown key {key!r} (known: {sorted(known)})")
            elif measured.get(key) is None:
                failures.append(f"{label}: nothing measured for {key!r} ({measured or 'nothing at all'})")
            elif not _COMPARE[op](measured[key], value):
                by = f" ({measured['ptxas']})" if "ptxas" in measured else ""
                failures.append(f"{label}: {key} is {measured[key]}{by}, expected {op} {value}")
    assert not failures, f"{step.name}.{name} not met:\n" + "\n".join(failures)


@pytest.mark.parametrize("step", STEP_PARAMS)
def test_each_step_assembles_exactly_where_it_says_it_runs(ptx, step):
    """For Turing, Ampere, Ada and Hopper (gpu_requirements.CHECKED_COMPUTE_CAPABILITIES): a step's kernels assemble
    (ptxas, nvJitLink's, on this CPU) for every compute capability the step says it runs on, and fail for every one
    it refuses — so ``Step.unavailable`` (hence verify, bench, ``matmul``'s choice) and the hardware agree, both
    ways. NVVM's PTX for 9.0 with its ``.target`` changed: what varies between the GPUs here is which instructions
    exist, and that is what ptxas checks."""
    from gemm_steps.toolkit.gpu_requirements import CHECKED_COMPUTE_CAPABILITIES, missing_compute_capability

    failures = []
    for label in step.kernel_labels():
        stats = _stats(ptx, step, label)
        if "assembles" not in stats:
            continue  # a tiled step's edge kernel: its fast kernel stands for it
        for cc in CHECKED_COMPUTE_CAPABILITIES:
            reason = missing_compute_capability(step.requires_compute_capability, step.min_compute_capability, cc)
            assembles = stats["assembles"][f"{cc[0]}.{cc[1]}"]
            if reason is None and not assembles:
                failures.append(f"{label}: does not assemble for compute capability {cc}, where the step says it runs")
            if reason is not None and assembles:
                failures.append(f"{label}: assembles for compute capability {cc}, where the step refuses: {reason}")
    assert not failures, "\n".join(failures)


def test_compute_capability_reasons():
    from gemm_steps.toolkit.gpu_requirements import missing_compute_capability

    assert missing_compute_capability(None, None, (7, 5)) is None
    assert missing_compute_capability((9, 0), None, (9, 0)) is None
    assert missing_compute_capability((9, 0), None, (8, 9)) == "needs a GPU of compute capability 9.0; this one is 8.9"
    assert missing_compute_capability(None, (8, 0), (8, 6)) is None
    assert missing_compute_capability(None, (8, 0), (7, 5)) == ("needs a GPU of compute capability 8.0 or newer; "
                                                              "this one is 7.5")


@pytest.mark.parametrize("entry", ALL_KERNELS)
def test_no_wgmma_operand_is_written_after_its_fence(ptx, entry):
    """The PTX ISA: registers a ``wgmma`` reads (A fragments, accumulators) are written before ``wgmma.fence``,
    never between it and the ``wgmma``."""
    step, label = entry
    stats = _stats(ptx, step, label)
    assert stats["wgmma.written_after_fence"] == 0, (
        f"{label}: {stats['wgmma.written_after_fence']} wgmma operand registers written after wgmma.fence "
        "(hand the fragments over with operand_bits before warpgroup_fence())")


# -- the counter itself, on PTX written by hand (no compiler needed) ----------------------------------------------

SAMPLE_PTX = """
.visible .entry k(.param .u64 p0)
{
\t.local .align 4 .b8 \t__local_depot0[32];
\t.reg .f32 %f<9>;
$L__BB0_1:
\tld.global.nc.v4.f32 \t{%f1, %f2, %f3, %f4}, [%rd5];
\t@%p1 ld.global.f32 \t%f5, [%rd6];
\t@!%p2 ld.global.L1::no_allocate.f32 %f6, [%rd6];
\tld.shared.v4.f32 \t{%f1, %f2, %f3, %f4}, [%r1+16];
\tst.shared.f32 \t[%r2], %f1;
\tst.global.v4.f32 [%rd1], {%f1, %f2, %f3, %f4};
\tfma.rn.f32 \t%f7, %f1, %f2, %f3; // fma.rn.f32 in a comment is not counted
\tfma.rn.ftz.f32 \t%f8, %f1, %f2, %f3;
\tbar.sync \t0;
\tbarrier.sync.aligned \t0;
\tst.local.f32 [%rd1], %f1;
\tld.local.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];
\tret;
}
"""


def test_ptx_stats_counts_what_it_says():
    stats = ptx_stats(SAMPLE_PTX)
    expected = {"ld.global.v4.f32": 1, "ld.global.f32": 2, "st.global.v4.f32": 1, "st.global.f32": 0,
                "ld.shared.v4.f32": 1, "ld.shared.f32": 0, "st.shared.f32": 1, "st.shared.v4.f32": 0,
                "fma.rn.f32": 2, "bar.sync": 2, "ld.local": 1, "st.local": 1, "local_decls": 1, "local": 3,
                "instructions": 13}
    assert {key: stats[key] for key in expected} == expected


def test_ptx_stats_of_clean_code_has_no_local():
    stats = ptx_stats("\tfma.rn.f32 %f1, %f2, %f3, %f4;\n\tret;\n")
    assert stats["local"] == 0 and stats["fma.rn.f32"] == 1


@pytest.mark.parametrize("spec,parsed", [(0, ("==", 0)), (">=1", (">=", 1)), ("<= 64", ("<=", 64)),
                                         ("==1024", ("==", 1024)), (">0", (">", 0))])
def test_parse_expectation(spec, parsed):
    assert parse_expectation(spec) == parsed


@pytest.mark.parametrize("spec", [">=x", "1.5", True, None, "=>1"])
def test_parse_expectation_rejects_nonsense(spec):
    with pytest.raises(ValueError):
        parse_expectation(spec)


FENCED_PTX = """
\tmov.b32 \t%r1, %f1;
\twgmma.fence.sync.aligned;
\tshl.b64 \t%rd2, %rd1, 4;
{WRITE}
\t{{
\t.reg .pred p;
\tsetp.ne.b32 p, %r9, 0;
\twgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 {{%f10, %f11, %f12, %f13, %f14, %f15, %f16, %f17}}, {{%r1, %r2, %r3, %r4}}, %rd2, p, 1, 1;
\t}}
\twgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 {{%f10, %f11, %f12, %f13, %f14, %f15, %f16, %f17}}, {{%r1, %r2, %r3, %r4}}, %rd2, p, 1, 1;
\twgmma.commit_group.sync.aligned;
{AFTER}
"""


@pytest.mark.parametrize("write,after,found", [
    ("", "", []),
    ("\tmov.b32 \t%r3, %f2;", "", [(5, "%r3")]),  # an A fragment written after the fence (step 14's bug)
    ("\tmov.f32 \t%f12, 0f00000000;", "", [(5, "%f12")]),  # an accumulator
    ("\tld.shared.v4.f32 \t{%f20, %r4, %f22, %f23}, [%r1];", "", [(5, "%r4")]),  # a vector load's destination
    ("\tst.shared.f32 \t[%r3], %f2;", "", []),  # a store reads its registers
    ("", "\twgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 {%f10}, {%r1, %r2, %r3, %r4}, %rd2, p, 1, 1;",
     [(13, "no wgmma.fence")]),  # a wgmma after the commit, with no fence of its own
])
def test_wgmma_fence_violations_finds_writes_between_the_fence_and_the_wgmma(write, after, found):
    assert wgmma_fence_violations(FENCED_PTX.format(WRITE=write, AFTER=after)) == found
