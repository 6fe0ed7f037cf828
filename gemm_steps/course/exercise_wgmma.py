"""The grader of exercise ``wgmma`` (``exercises/wgmma.py``, lessons 14–15): one warpgroup's ``wgmma`` — B's
shared-memory descriptor, and the fence, commit and wait around the instruction — and the pieces the
``warp_specialized`` grader shares (the watched twins, the GPU-mode compile that reads the PTX's wgmma rules).

On the simulator the ``wgmma`` twin is finished when it returns and its fences and waits do nothing, so a kernel that
breaks the rules still gets the right numbers there. The grader therefore watches the twins the kernel calls (it
replaces them in the kernel's module for the launch, the way :mod:`.race_check` replaces shared arrays; the toolkit is
unchanged) and records, per thread and in order, with the learner's line: each write of a register a ``wgmma``
reads (``operand_bits``, ``zero_accumulators``), ``warpgroup_fence``, ``wgmma_tf32`` (with its descriptor),
``warpgroup_commit`` and the waits. The accumulators a ``wgmma`` returns are *in flight* until a wait retires the
group they were committed in and they come back through it; a read of them before that is named. The checks:

* **it compiles for a GPU** (NVVM, compute capability 9.0), and its PTX keeps the ``wgmma`` rules
  (:func:`gemm_steps.harness.ptx.wgmma_fence_violations`): a ``wgmma.fence`` before each ``wgmma``, and no operand
  register written between them;
* **the fences and the wait**, on the simulator: a ``wgmma`` with no ``warpgroup_fence()`` before it; a register it
  reads written between the fence and it; the accumulators read before a wait — no wait, a wait before the
  ``wgmma`` or before its commit, ``warpgroup_wait_but_one`` (which leaves the newest group running), or a wait whose
  result is not what is read;
* **the descriptor**, field by field against the tile's layout: start address, leading byte offset (LBO), stride byte
  offset (SBO), layout type (swizzle) — which field, what it holds, what the layout needs;
* **the numbers**: two random A and B, against A·B with both read as TF32 (truncated, as the tensor core reads them).

On a GPU only the compile check and the numbers run (the watched twins are the simulator's).
"""

from __future__ import annotations

import dataclasses
import re
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from ..toolkit.backend import SIMULATOR
from ..toolkit.tensor_core_ops import truncate_to_tf32
from .race_check import abort_after

WARPGROUP = 128
M, N, K = 64, 16, 8
#: Seconds one launch may take (a right kernel takes about one on the simulator).
LAUNCH_SECONDS = 30.0
#: A right kernel's C is A·B of TF32 (truncated) inputs to this many float32 epsilons of |A|·|B|.
NUMBERS_SLACK = 4.0
EPS32 = float(np.finfo(np.float32).eps)
#: The layout of the stub's tile (``b_offset``): no swizzle, core matrices of k 0–3 and 4–7 256 bytes apart, of
#: columns 0–7 and 8–15 128 bytes apart.
LAYOUT_TYPE, LEADING_BYTES, STRIDE_BYTES = 0, 256, 128
LAYOUT_NAMES = {0: "no swizzle", 1: "128-byte swizzle", 2: "64-byte swizzle", 3: "32-byte swizzle"}


def solution():
    from . import exercise_wgmma_solution

    return exercise_wgmma_solution


def time_against_step(exercise, module) -> str:
    return ("one warpgroup's one wgmma: nothing here to time against steps 14–15 (lessons 14 and 15 time the steps; "
            "gemm-steps bench --steps 14 15)")


def launch(kernel, a, b, c, blocks=None):
    """one warpgroup: wgmma_kernel[1, 128](a, b, c)"""
    kernel[1, WARPGROUP](a, b, c)


# -- the GPU-mode compile, with the PTX's wgmma facts ---------------------------------------------------------------
def ptx_facts(ptx: str) -> dict:
    """What the graders of the warpgroup exercises read in a kernel's PTX: the wgmma rule's violations (each with
    the PTX line's instruction), and how many wgmma and setmaxnreg it has."""
    from ..harness.ptx import _opcodes, wgmma_fence_violations

    lines = ptx.splitlines()
    ops = _opcodes(ptx)
    return {"wgmma_violations": [(number, register, lines[number - 1].split("//")[0].strip())
                                 for number, register in wgmma_fence_violations(ptx)],
            "wgmma": sum(n for op, n in ops.items() if op.startswith("wgmma.mma_async")),
            "setmaxnreg": sum(n for op, n in ops.items() if op.startswith("setmaxnreg"))}


def check_compiles(exercise, module, report) -> dict | None:
    """exercises' compile check (NVVM, the exercise's compute capability), its PTX summary holding :func:`ptx_facts`
    (from the simulator); fails the report where the PTX breaks the wgmma rules. The answer, or None where not
    checked."""
    from . import exercises

    answer = exercises._check_compiles(exercise, module, report, facts="gemm_steps.course.exercise_wgmma:ptx_facts")
    if not report.passed or not answer or not answer.get("ok") or "wgmma_violations" not in answer["ptx"]:
        return answer
    violations = answer["ptx"]["wgmma_violations"]
    missing = [v for v in violations if v[1] == "no wgmma.fence"]
    if missing:
        number, _, code = missing[0]
        report.fail(f"{exercise.kernel}'s compiled code issues a wgmma with no wgmma.fence before it (PTX line "
                    f"{number}: {code.split(',')[0]} …): warpgroup_fence() is missing",
                    "the fence orders the warpgroup's register writes (A's fragments, the accumulators) before the "
                    "wgmma that reads them: write them, then warpgroup_fence(), then wgmma_tf32 (lesson 14, 'Two "
                    "hazards the kernel respects')")
    elif violations:
        number, register, code = violations[0]
        constant = re.match(r"mov\.\w+\s+%\w+,\s*(0[fd][0-9A-Fa-f]+|-?\d+);", code)
        hints = ([f"{code.split()[-1].rstrip(';')} is a constant: the compiler writes a constant into a register "
                  "where it is used, so zeros made before the fence (zero_accumulators) are written after it. "
                  "fresh_accumulators() (given) passes them through a wait, which writes them where it stands"]
                 if constant else [])
        report.fail(f"{exercise.kernel}'s compiled code writes {register}, a register the wgmma reads, between the "
                    f"wgmma.fence and the wgmma (PTX line {number}: {code}): the PTX ISA forbids it, and the "
                    "wgmma may read the old value",
                    "write every register the wgmma reads — operand_bits of A's fragments, the accumulators — "
                    "before warpgroup_fence(), none after it (operand_bits, not a float: the compiler may sink a "
                    "float's conversion to bits after the fence)", *hints)
    return answer


# -- watching the twins on the simulator ----------------------------------------------------------------------------
@dataclass
class Event:
    seq: int
    kind: str  # "write", "fence", "wgmma", "commit", "wait", "read", "setmaxnreg", "mbarrier_wait", …
    where: tuple  # (file, line) of the kernel's code that called it
    detail: dict = field(default_factory=dict)


class InFlight(tuple):
    """Accumulators a ``wgmma`` returned, not yet retired by a wait: reading one is recorded."""

    def __new__(cls, values, watch, token):
        self = super().__new__(cls, values)
        self.watch, self.token = watch, token
        return self

    def __getitem__(self, index):
        self.watch.record("read", token=self.token)
        return tuple.__getitem__(self, index)

    def __iter__(self):
        self.watch.record("read", token=self.token)
        return tuple.__iter__(self)


class Watch:
    """The events of one launch, per thread (linear thread index), in the order each thread made them."""

    def __init__(self):
        self.lock = threading.Lock()
        self.seq = 0
        self.events: dict[int, list[Event]] = {}
        self.arrivals: dict[int, int] = {}  # threads that entered wgmma_tf32, and how often

    def record(self, kind: str, depth: int = 0, **detail) -> Event | None:
        thread = threading.current_thread()
        tid = getattr(thread, "thread_id", None)
        if tid is None:
            return None
        frame = sys._getframe(depth + 2)
        with self.lock:
            self.seq += 1
            event = Event(self.seq, kind, (frame.f_code.co_filename, frame.f_lineno), detail)
            self.events.setdefault(tid, []).append(event)
        return event

    def of(self, tid: int, kind: str) -> list[Event]:
        return [e for e in self.events.get(tid, []) if e.kind == kind]


WATCHED = ("operand_bits", "zero_accumulators", "warpgroup_fence", "fence_proxy_async", "wgmma_tf32",
           "warpgroup_commit", "warpgroup_wait_all", "warpgroup_wait_but_one", "registers_raise_to",
           "registers_lower_to")


def _plain(acc) -> tuple:
    return tuple(tuple.__iter__(acc))


def _watched_twins(watch: Watch) -> dict:
    """Stand-ins of the warpgroup twins that record what each thread did, then do what the twin does."""
    from ..toolkit import warpgroup_ops as wg

    real = {name: getattr(wg, name) for name in WATCHED}  # taken before any is replaced
    state: dict = {}  # per thread: tokens not committed yet, committed groups

    def mine():
        tid = threading.current_thread().thread_id
        return state.setdefault(tid, {"open": [], "groups": [], "tokens": 0})

    def operand_bits(x):
        watch.record("write", what="operand_bits")
        return real["operand_bits"](x)

    def zero_accumulators(count):
        watch.record("write", what="zero_accumulators")
        return real["zero_accumulators"](count)

    def warpgroup_fence():
        watch.record("fence")

    def fence_proxy_async():
        watch.record("proxy_fence")

    def wgmma_tf32(shared, a0, a1, a2, a3, descriptor, acc, accumulate):
        s = mine()
        s["tokens"] += 1
        token = (threading.current_thread().thread_id, s["tokens"])
        watch.record("wgmma", token=token, descriptor=int(descriptor), shared=shared, accumulate=int(accumulate))
        with watch.lock:
            watch.arrivals[token[0]] = watch.arrivals.get(token[0], 0) + 1
        result = real["wgmma_tf32"](shared, a0, a1, a2, a3, descriptor, _plain(acc), accumulate)
        s["open"].append(token)
        return InFlight(result, watch, token)

    def warpgroup_commit():
        s = mine()
        watch.record("commit", tokens=list(s["open"]))
        s["groups"].append(s["open"])
        s["open"] = []

    def wait(pending):
        def warpgroup_wait(acc):
            s = mine()
            retired = [t for group in s["groups"][:max(0, len(s["groups"]) - pending)] for t in group]
            watch.record("wait", pending=pending, token=getattr(acc, "token", None), retired=retired)
            if isinstance(acc, InFlight) and acc.token in retired:
                return _plain(acc)
            return acc
        return warpgroup_wait

    def registers_raise_to(count):
        watch.record("setmaxnreg", action="inc", count=int(count))
        return real["registers_raise_to"](count)

    def registers_lower_to(count):
        watch.record("setmaxnreg", action="dec", count=int(count))
        return real["registers_lower_to"](count)

    return {"operand_bits": operand_bits, "zero_accumulators": zero_accumulators, "warpgroup_fence": warpgroup_fence,
            "fence_proxy_async": fence_proxy_async, "wgmma_tf32": wgmma_tf32, "warpgroup_commit": warpgroup_commit,
            "warpgroup_wait_all": wait(0), "warpgroup_wait_but_one": wait(1),
            "registers_raise_to": registers_raise_to, "registers_lower_to": registers_lower_to}


@contextmanager
def watched(module, extra: dict | None = None):
    """Within this block the twins the kernel's module uses — by name in its globals, or through the toolkit's
    modules — are the recording stand-ins (the toolkit's own functions are put back after). ``extra``: a function
    ``extra(watch)`` → {toolkit module: {name: stand-in}} for more. Yields the :class:`Watch`."""
    from ..toolkit import warpgroup_ops as wg

    watch = Watch()
    stand_ins = {wg: _watched_twins(watch)}
    for toolkit_module, functions in (extra(watch) if extra else {}).items():
        stand_ins.setdefault(toolkit_module, {}).update(functions)
    replaced = {id(getattr(m, name)): function for m, functions in stand_ins.items()
                for name, function in functions.items()}
    saved = []
    for space in [vars(module)] + [vars(m) for m in stand_ins]:
        for key, value in list(space.items()):
            if id(value) in replaced and callable(value):
                saved.append((space, key, value))
    for space, key, value in saved:
        space[key] = replaced[id(value)]
    try:
        yield watch
    finally:
        for space, key, value in reversed(saved):
            space[key] = value


def ranges(numbers) -> str:
    """``[0, 1, 2, 3, 8]`` → ``"0–3, 8"``."""
    numbers, parts, start = sorted(numbers), [], None
    for i, x in enumerate(numbers):
        start = x if start is None else start
        if i + 1 == len(numbers) or numbers[i + 1] != x + 1:
            parts.append(str(start) if start == x else f"{start}–{x}")
            start = None
    return ", ".join(parts)


def at(event: Event) -> str:
    from .race_check import source_line

    return source_line(event.where)


def missing_arrivals(watch: Watch, threads: int) -> str | None:
    """Threads that entered a ``wgmma_tf32`` their warpgroup's other threads never reached, said."""
    groups = {}
    for tid in range(threads):
        groups.setdefault(tid // WARPGROUP, {})[tid] = watch.arrivals.get(tid, 0)
    for group, counts in groups.items():
        most = max(counts.values())
        short = [tid for tid, n in counts.items() if n < most]
        if most and short:
            came = [tid for tid, n in counts.items() if n == most]
            return (f"threads {ranges(came)} called wgmma_tf32 and waited for threads {ranges(short)} of their "
                    "warpgroup, which never called it: wgmma is one instruction of the whole warpgroup "
                    "(.sync.aligned) — all 128 threads call it, together, each with its own fragments")
    return None


def protocol_problem(watch: Watch, threads: range) -> tuple[str, list[str]] | None:
    """The first thread whose fence, register writes, commit, wait or accumulator reads break the rules, said."""
    for tid in threads:
        events = watch.events.get(tid, [])
        fence = None  # the last fence
        written = None  # a register write after that fence
        for event in events:
            if event.kind == "fence":
                fence, written = event, None
            elif event.kind == "write" and fence is not None and written is None:
                written = event
            elif event.kind == "commit":
                fence, written = None, None
            elif event.kind == "wgmma":
                if fence is None:
                    return (f"thread {tid} issued a wgmma with no warpgroup_fence() before it, at\n            "
                            f"{at(event)}\n        the wgmma.fence is missing",
                            ["the fence orders the warpgroup's register writes (A's fragments, the accumulators) "
                             "before the wgmma that reads them: write them, then warpgroup_fence(), then wgmma_tf32 "
                             "(lesson 14, 'Two hazards the kernel respects')"])
                if written is not None:
                    return (f"thread {tid} wrote a register the wgmma reads ({written.detail['what']}) after the "
                            f"warpgroup_fence() and before the wgmma, at\n            {at(written)}\n        fence "
                            f"at {at(fence)}\n        wgmma at {at(event)}",
                            ["the PTX ISA requires every write of a wgmma's registers (its A fragments, its "
                             "accumulators) to come before the wgmma.fence: the wgmma may read the old value. Move "
                             "the write above warpgroup_fence()"])
        for read in (e for e in events if e.kind == "read"):
            wgmma = next(e for e in events if e.kind == "wgmma" and e.detail["token"] == read.detail["token"])
            return (f"thread {tid} read the accumulators of the wgmma at {at(wgmma)}\n        before a wait "
                    f"retired it, at\n            {at(read)}\n        {_why_not_retired(events, wgmma, read)}",
                    ["wgmma is asynchronous: it is issued, the warps go on, and its accumulators are written "
                     "later. warpgroup_commit() closes the group it belongs to; acc = warpgroup_wait_all(acc) waits "
                     "for it — then read acc (lesson 14, 'Two hazards the kernel respects')"])
    return None


def _why_not_retired(events: list[Event], wgmma: Event, read: Event) -> str:
    token = wgmma.detail["token"]
    waits_before = [e for e in events if e.kind == "wait" and e.seq < read.seq]
    after = [e for e in waits_before if e.seq > wgmma.seq]
    commit = next((e for e in events if e.kind == "commit" and token in e.detail["tokens"]), None)
    if not after:
        return ("no wait comes between the wgmma and that read" + (
            f": the last wait before it, at {at(waits_before[-1])}\n        comes before the wgmma, with nothing to "
            "wait for yet (a wait that comes too early)" if waits_before else ""))
    if commit is None or commit.seq > after[-1].seq:
        return (f"the wait at {at(after[-1])}\n        comes before warpgroup_commit()"
                + (f" (at {at(commit)})" if commit else " (there is none)")
                + ": a wait counts committed groups, and this wgmma was in none yet (the wait comes too early)")
    retiring = [e for e in after if token in e.detail["retired"]]
    if not retiring:
        return (f"the wait at {at(after[-1])}\n        is warpgroup_wait_but_one: it leaves the newest group — this "
                "wgmma's — running. With one group in flight, wait for all (warpgroup_wait_all)")
    return (f"the wait at {at(retiring[-1])}\n        retired it, but what was read is not what came back from the "
            "wait: acc = warpgroup_wait_all(acc), and read that acc (on a GPU the registers pass through the wait; "
            "a read of the old value may be placed before it)")


def descriptor_fields(descriptor: int) -> dict:
    return {"start": (descriptor & 0x3FFF) << 4, "leading": ((descriptor >> 16) & 0x3FFF) << 4,
            "stride": ((descriptor >> 32) & 0x3FFF) << 4, "layout": (descriptor >> 62) & 3}


def descriptor_problem(watch: Watch, threads: range) -> tuple[str, list[str]] | None:
    """The first wgmma whose descriptor does not describe the tile it was passed, field by field."""
    from ..toolkit.warpgroup_ops import shared_address

    for tid in threads:
        for event in (e for e in watch.events.get(tid, []) if e.kind == "wgmma"):
            got = descriptor_fields(event.detail["descriptor"])
            start = int(shared_address(event.detail["shared"], 0))
            layout_hint = ("b_offset (given) stores B in core matrices of 8 columns × 4 k (128 contiguous bytes): "
                           f"those of k 0–3 and 4–7 of a column are {LEADING_BYTES} bytes apart "
                           f"(b_offset(n, k + 4) − b_offset(n, k) = {LEADING_BYTES // 4} floats), those of columns n "
                           "and n + 8 are "
                           f"{STRIDE_BYTES} bytes apart ({STRIDE_BYTES // 4} floats)")
            if got["layout"] != LAYOUT_TYPE:
                return (f"the descriptor of the wgmma at {at(event)}\n        has layout type {got['layout']} "
                        f"({LAYOUT_NAMES[got['layout']]}, bits 62–63); B's tile is stored with no swizzle (type 0)",
                        ["matrix_descriptor(address, leading_bytes, stride_bytes) makes a no-swizzle descriptor; "
                         "swizzled_descriptor is for tiles stored in the 128-byte swizzle (step 14's A)", layout_hint])
            if got["start"] != start & 0x3FFF0:
                return (f"the descriptor of the wgmma at {at(event)}\n        starts at shared address "
                        f"{got['start']:#x} (bits 0–13, in 16-byte units); the tile it was passed starts at "
                        f"{start:#x}", ["the start address is shared_address(tile, 0): the tile's first byte "
                                        "in the shared window (not an index, not a generic pointer)"])
            if (got["leading"], got["stride"]) == (STRIDE_BYTES, LEADING_BYTES):
                return (f"the descriptor of the wgmma at {at(event)}\n        has its two strides swapped: leading "
                        f"byte offset (LBO, bits 16–29) {got['leading']} bytes and stride byte offset (SBO, bits "
                        f"32–45) {got['stride']}; this tile needs LBO = {LEADING_BYTES} (between core matrices "
                        f"adjacent in K) and SBO = {STRIDE_BYTES} (adjacent in N)", [layout_hint])
            for name, key, bits, want, between in (
                    ("leading byte offset (LBO", "leading", "16–29", LEADING_BYTES, "core matrices adjacent in K"),
                    ("stride byte offset (SBO", "stride", "32–45", STRIDE_BYTES, "core matrices adjacent in N")):
                if got[key] != want:
                    return (f"the descriptor of the wgmma at {at(event)}\n        has a {name}, bits {bits}) of "
                            f"{got[key]} bytes; this tile's layout needs {want}: the distance between {between}",
                            [layout_hint, "the fields count 16-byte units: matrix_descriptor takes bytes and "
                                          "divides by 16 itself"])
    return None


# -- the exercise -----------------------------------------------------------------------------------------------------
def tf32_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A·B with A and B read as TF32 (truncated) and summed in float64, and the scale |A|·|B| of its rounding."""
    a32, b32 = truncate_to_tf32(a).astype(np.float64), truncate_to_tf32(b).astype(np.float64)
    return a32 @ b32, np.abs(a32) @ np.abs(b32)


def numbers_problem(c: np.ndarray, a: np.ndarray, b: np.ndarray, observed,
                    stores: str = "store_accumulators (given) stores each thread's 8 accumulators") -> str | None:
    from . import exercises

    stored = observed.stored(c.shape) if observed is not None else c.view(np.uint32) != exercises.POISON_BITS
    if not stored.all():
        rows, cols = np.nonzero(~stored)
        return (f"{int((~stored).sum())} of {c.size} elements of C were never written, first C[{rows[0]}, {cols[0]}]"
                f": {stores}")
    reference, scale = tf32_product(a, b)
    with np.errstate(invalid="ignore"):
        wrong = ~(np.abs(c.astype(np.float64) - reference) <= NUMBERS_SLACK * EPS32 * scale + 1e-30)
    if not wrong.any():
        return None
    i, j = (int(x) for x in np.argwhere(wrong)[0])
    return (f"{int(wrong.sum())} of {c.size} elements of C are not A·B (A and B read as TF32), first C[{i}, {j}] = "
            f"{c[i, j]:.7g} where it is {reference[i, j]:.7g}")


def grade(exercise, module, seed: int = 0, say=None, time_limit: float = LAUNCH_SECONDS, compile: bool = True):
    from . import exercises

    report, kernel = exercises.opening_checks(exercise, module, compile, check=check_compiles)
    if kernel is None:
        return report
    exercise = dataclasses.replace(exercise, launch=launch)
    time_limit = min(time_limit, LAUNCH_SECONDS)
    rng = np.random.default_rng(seed + 1)
    for case in (1, 2):
        if say is not None:
            say(f"  …     random A (64×8) and B (8×16), draw {case}, on the {'simulator' if SIMULATOR else 'GPU'}")
        a = rng.standard_normal((M, K), dtype=np.float32)
        b = rng.standard_normal((K, N), dtype=np.float32)
        c = np.full((M, N), exercises.POISON_BITS, dtype=np.uint32).view(np.float32)
        if SIMULATOR:
            with watched(module) as watch, abort_after(time_limit):
                failure, observed = exercises._launch(exercise, kernel, a, b, c, None, time_limit + 10)
        else:
            watch = None
            failure, observed = exercises._launch(exercise, kernel, a, b, c, None, time_limit)
        if failure is not None:
            found = descriptor_problem(watch, range(WARPGROUP)) if watch is not None else None
            if found is not None:  # a descriptor pointing outside the tile: the twin failed reading through it
                return report.fail(f"draw {case}: {found[0]}", *found[1])
            stuck = missing_arrivals(watch, WARPGROUP) if watch is not None else None
            return report.fail(f"draw {case}: {stuck or failure}")
        if observed is not None and observed.early_read is not None:
            return report.fail(f"draw {case}: {exercises._early_read(observed, N)}")
        if watch is not None:
            if not any(watch.of(tid, "wgmma") for tid in range(WARPGROUP)):
                unwritten = numbers_problem(c, a, b, observed) or ""
                return report.fail(f"draw {case}: the warpgroup never called wgmma_tf32" +
                                   (f", and {unwritten}" if "never written" in unwritten else ""),
                                   "this exercise is one wgmma of the whole warpgroup: A's fragments as operand_bits, "
                                   "the accumulators from fresh_accumulators(), warpgroup_fence(), "
                                   "wgmma_tf32(tile, a0, a1, a2, a3, b_descriptor(tile), acc, 0), warpgroup_commit(), "
                                   "acc = warpgroup_wait_all(acc), then store_accumulators")
            found = protocol_problem(watch, range(WARPGROUP)) or descriptor_problem(watch, range(WARPGROUP))
            if found is not None:
                return report.fail(f"draw {case}: {found[0]}", *found[1])
        wrong = numbers_problem(c, a, b, observed)
        if wrong is not None:
            return report.fail(f"draw {case}: {wrong}")
        report.ok(f"draw {case}: every element right (C = A·B with A and B read as TF32)"
                  + (", the descriptor's fields, the fence before the wgmma with no register written after it, "
                     "the accumulators read after the wait" if SIMULATOR else ""))
    if not SIMULATOR:
        report.skip("the fences, the wait and the descriptor's fields: checked on the simulator "
                    f"(NUMBA_ENABLE_CUDASIM=1 gemm-steps exercise check {exercise.name})")
    return report
