"""The compile-time patches (gemm_steps/toolkit/numba_patches.py) change how long Numba takes, never what it makes:
kernels compiled with and without them give the same PTX. (The patched compile is the course's own,
``harness.ptx.compile_kernel_ptx``, which lowers once for PTX and LTO-IR; the unpatched one is plain ``cuda.compile``.) Small tiles keep the unpatched compiles short; they still
have what the patches deal with (unrolled register tiles reassigned in every k-step, branches, loops, phi nodes)."""

import pytest

from ptx_jobs import patches_job

SMALL_TILES = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 8, "THREAD_M": 4, "THREAD_N": 8}
CASES = [("register_2d", None), ("warp_tiling", {**SMALL_TILES, "BLOCK_K": 16, "THREAD_N": 4}),
         ("stream_k", SMALL_TILES)]


#: The comparisons compile in the GPU-mode worker (tests/ptx_jobs.py), after the PTX the other tests need;
#: these tests run late (conftest.py), so this process does not wait for them.
@pytest.mark.parametrize("step, config", [pytest.param(step, config, id=step, marks=pytest.mark.ptx(patches_job(step, config)))
                                          for step, config in CASES])
def test_the_patches_leave_the_ptx_unchanged(ptx, step, config):
    compared = ptx.stats(patches_job(step, config), "patches")
    assert "error" not in compared, compared.get("error")
    assert compared, "no kernel was compiled"
    for label, (same, seconds_with, seconds_without) in compared.items():
        assert same, f"{label}: the course's compile (patched) and numba-cuda's cuda.compile differ " \
                     f"({seconds_with:.1f} s and {seconds_without:.1f} s)"


def test_a_changed_kernel_gives_different_ptx():
    """The comparison can fail: normalizing Numba's per-process counters must not hide a real difference."""
    from numba_patch_check import _normalized

    two_arrays = "mov.u64 %rd1, _cudapy_smem_3;\nmov.u64 %rd2, _cudapy_smem_4;"
    assert _normalized(two_arrays) == _normalized(two_arrays.replace("_3", "_1").replace("_4", "_2"))
    assert _normalized(two_arrays) != _normalized(two_arrays.replace("_4", "_3"))  # one array where there were two
    assert _normalized(two_arrays) != _normalized(two_arrays.replace("%rd2", "%rd3"))


def _random_flow(rng, blocks: int, names: int):
    """A random control-flow graph (a chain with random forward and backward edges, so loops in loops) and random
    variables used and defined in each block: what Numba's liveness analysis takes."""
    from numba.cuda.core.controlflow import CFGraph

    cfg = CFGraph()
    for b in range(blocks):
        cfg.add_node(b)
    for b in range(blocks - 1):
        cfg.add_edge(b, b + 1)
    for _ in range(blocks):
        cfg.add_edge(int(rng.integers(blocks)), int(rng.integers(blocks)))
    cfg.set_entry_point(0)
    cfg.process()
    use = {b: {f"v{i}" for i in rng.choice(names, int(rng.integers(0, 6)), replace=False)} for b in range(blocks)}
    define = {b: {f"v{i}" for i in rng.choice(names, int(rng.integers(0, 6)), replace=False)} for b in range(blocks)}
    return cfg, dict.fromkeys(range(blocks)), use, define


@pytest.mark.parametrize("seed", range(40))
def test_the_liveness_patch_finds_numbas_live_sets(seed):
    """The sparse liveness (numba_patches._compute_live_map_sparse) against numba-cuda's own compute_live_map on
    random graphs: the same set for every block, in the same order."""
    import numpy as np
    from numba.cuda.core import analysis

    from gemm_steps.toolkit import numba_patches

    rng = np.random.default_rng(seed)
    flow = _random_flow(rng, int(rng.integers(1, 40)), 30)
    original = numba_patches._ORIGINALS.get("live_map", analysis.compute_live_map)
    expected = original(*flow)
    found = numba_patches._compute_live_map_sparse(*flow)
    assert found == expected and list(found) == list(expected)


def test_the_random_graphs_have_what_makes_liveness_hard():
    """The graphs above are not trivial: they have loops, and live sets that grew past a block's own uses (what the
    repeated sweeps of the original were for), so an analysis that skipped propagating would fail there."""
    import numpy as np

    from gemm_steps.toolkit import numba_patches

    grown = loops = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        cfg, blocks, use, define = _random_flow(rng, int(rng.integers(1, 40)), 30)
        live = numba_patches._compute_live_map_sparse(cfg, blocks, use, define)
        grown += sum(live[b] != use[b] for b in blocks)
        loops += bool(cfg.loops())
    assert grown > 100 and loops > 10


def _random_blocks(seed: int):
    """Random Numba IR: blocks in three scopes (some blocks share one, as Numba's passes leave them), each assigning
    tuples and calls of random variables — calls with keyword arguments, so lists of (name, variable) pairs nest."""
    import numpy as np
    from numba.cuda.core import ir

    rng = np.random.default_rng(seed)
    loc = ir.Loc("random.py", 1)
    scopes = [ir.Scope(None, loc) for _ in range(3)]
    blocks = {}
    for label in range(int(rng.integers(1, 12))):
        scope = scopes[int(rng.integers(len(scopes)))]
        block = ir.Block(scope, loc)
        var = lambda: ir.Var(scope, f"v{rng.integers(25)}", loc)  # noqa: E731
        for _ in range(int(rng.integers(0, 8))):
            items = [var() for _ in range(int(rng.integers(0, 4)))]
            value = ir.Expr.build_tuple(items, loc) if rng.random() < 0.5 else \
                ir.Expr.call(var(), items, [(f"k{i}", var()) for i in range(int(rng.integers(0, 3)))], loc)
            block.append(ir.Assign(value, var(), loc))
        blocks[label] = block
    return blocks


@pytest.mark.parametrize("seed", range(20))
def test_the_scope_patch_defines_what_numba_defines(seed):
    """numba_patches._fixup_var_define_once_per_scope (one walk per scope) against numba-cuda's
    fixup_var_define_in_scope (one walk per block) on random IR: every scope ends with the same names, in the same
    order, bound to the same variables."""
    from numba.cuda.core import ir_utils

    from gemm_steps.toolkit import numba_patches

    def defined(blocks):
        scopes = list({id(block.scope): block.scope for block in blocks.values()}.values())
        return [[(name, str(var)) for name, var in scope.localvars._con.items()] for scope in scopes]

    expected, found = _random_blocks(seed), _random_blocks(seed)
    ir_utils.fixup_var_define_in_scope(expected)  # the original: the patch replaces untyped_passes' name for it
    numba_patches._fixup_var_define_once_per_scope(found)
    assert defined(found) == defined(expected)
    assert any(defined(expected))  # something was defined: the comparison is not of empty scopes


@pytest.mark.parametrize("seed", range(20))
def test_the_list_vars_patch_lists_what_numba_lists(seed):
    """numba_patches._rec_list_vars_by_type against numba-cuda's Inst._rec_list_vars: the same variables, in the same
    order, for every statement of random IR (nested tuples, lists and keyword pairs)."""
    from numba.cuda.core import ir

    from gemm_steps.toolkit import numba_patches

    original = numba_patches._ORIGINALS.get("rec_list_vars", ir.Inst._rec_list_vars)
    for block in _random_blocks(seed).values():
        for stmt in block.body:
            expected = original(stmt, stmt.__dict__)
            found = numba_patches._rec_list_vars_by_type(stmt, stmt.__dict__)
            assert [(v.name, id(v)) for v in found] == [(v.name, id(v)) for v in expected]
