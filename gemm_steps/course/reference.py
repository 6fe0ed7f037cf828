"""What cuBLAS runs, read from the reference dissections (``results/reference-<gpu>-<date>.json``, written on a GPU by
``scripts/reference_kernels.py``): each kernel's launch, its SASS, its work per FLOP, and its clock and power under
load, for cuBLAS TF32, cuBLAS SGEMM and the Hopper steps. Lesson 17's "What cuBLAS runs" shows these tables; every
later explanation of a gap to cuBLAS cites the file.

The helpers return tables and numbers (:class:`Kernel`); the sentences around them are the lesson's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gemm_steps.harness import results_files

from .display import MarkdownTable, table

#: How the tables name each profiled target.
LABELS = {"cublas_tf32": "cuBLAS TF32", "cublas": "cuBLAS SGEMM", "warpgroup_tf32": "step 15",
          "tma_pipeline": "step 16", "warp_specialized": "step 17", "warp_specialized_3xtf32": "step 18",
          "pingpong": "step 19"}
#: The Hopper steps' reference, against which energy per FLOP is given.
REFERENCE = "cublas_tf32"


@dataclass(frozen=True)
class Kernel:
    """One kernel as profiled at one size (a launch after a warm-up) and as it ran back to back under load."""

    target: str
    name: str
    grid: int
    threads: int
    cluster: int
    registers: int
    dynamic_shared_kb: float
    tensor_core: str  # the HGMMA form(s), with where operand A comes from; "" for none
    tma_loads: int  # static UTMALDG instructions …
    multicast_loads: int  # … of which multicast across the cluster
    tma_stores: int  # static UTMASTG: the epilogue through shared memory and the copy engine
    global_stores: int  # static STG: the epilogue straight from registers
    setmaxnreg: int
    warp_instructions_per_flop: float
    l2_bytes_per_flop: float
    dram_bytes_per_flop: float
    sm_clock_mhz: float
    power_w: float
    tflops: float  # back to back, no L2 flush: the load run's own measure, not the course benchmark's

    @property
    def label(self) -> str:
        return LABELS.get(self.target, self.target)

    @property
    def energy_per_flop(self) -> float:
        """Joules per FLOP under load (board power / FLOP per second)."""
        return self.power_w / (self.tflops * 1e12)


@dataclass(frozen=True)
class Reference:
    path: Path
    gpu: str
    date: str
    document: dict

    def kernel(self, target: str, size: int) -> Kernel:
        entry = self.document["kernels"][target][str(size)]
        launch, sass, per_flop = entry["launch"], entry["sass"], entry["per_flop"]
        load = self.document["under_load"][str(size)][target]
        return Kernel(
            target=target, name=entry["kernel"], grid=_value(launch, "Grid Size"), threads=_value(launch, "Block Size"),
            cluster=_value(launch, "Cluster Size") or 1, registers=_value(launch, "Registers Per Thread"),
            dynamic_shared_kb=_value(launch, "Dynamic Shared Memory Per Block"),
            tensor_core=", ".join(sorted(sass["hgmma"])), tma_loads=sass["named"]["UTMALDG"],
            multicast_loads=sass["multicast_loads"], tma_stores=sass["named"]["UTMASTG"],
            global_stores=sass["named"]["STG"], setmaxnreg=sass["named"]["USETMAXREG"],
            warp_instructions_per_flop=per_flop["warp_instructions"], l2_bytes_per_flop=per_flop["l2_bytes"],
            dram_bytes_per_flop=per_flop["dram_bytes"], sm_clock_mhz=load["sm_clock_mhz"], power_w=load["power_w"],
            tflops=load["tflops_back_to_back"])

    def targets(self) -> list[str]:
        return list(self.document["kernels"])

    def executed(self, target: str, size: int, top: int = 12) -> list[tuple[str, int]]:
        """The most executed SASS opcodes of one kernel at one size (warp instructions over the launch)."""
        counts = self.document["kernels"][target][str(size)]["sass"].get("executed_by_opcode", {})
        return sorted(counts.items(), key=lambda item: -item[1])[:top]


def _value(launch: dict, name: str):
    """A LaunchStats value whose key carries its unit (``"Dynamic Shared Memory Per Block [Kbyte]"``) or not."""
    return next((value for key, value in launch.items() if key == name or key.startswith(name + " [")), None)


def load(gpu: str | None = None) -> Reference | None:
    """The newest reference dissection (of ``gpu``, a name such as ``"NVIDIA H200"``, if given); None without one."""
    return next((ref for ref in load_all() if gpu is None or ref.gpu == gpu), None)


def load_all() -> list[Reference]:
    """The newest reference dissection of each GPU that has one."""
    found, seen = [], set()
    for path, data in results_files.references():
        gpu = data["environment"].get("gpu", "?")
        if gpu not in seen:
            seen.add(gpu)
            found.append(Reference(path, gpu, str(data["environment"].get("date", ""))[:10], data))
    return found


def launch_table(ref: Reference, size: int, targets: list[str] | None = None) -> MarkdownTable:
    """Grid, threads, cluster, registers, shared memory, the tensor-core instruction and the copy engine's loads and
    stores of each kernel at size³."""
    rows = []
    for target in targets or ref.targets():
        k = ref.kernel(target, size)
        rows.append({"kernel": k.label, "grid": k.grid, "threads": k.threads, "cluster": k.cluster,
                     "registers": k.registers, "shared KB": k.dynamic_shared_kb,
                     "tensor-core instruction": k.tensor_core or "— (FFMA)",
                     "TMA loads (multicast)": f"{k.tma_loads} ({k.multicast_loads})", "TMA stores": k.tma_stores,
                     "STG": k.global_stores, "setmaxnreg": k.setmaxnreg})
    return table(rows, {"shared KB": "{:.1f}"})


def energy_table(ref: Reference, size: int, targets: list[str] | None = None) -> MarkdownTable:
    """Each kernel back to back under load — SM clock, board power, TFLOPS, energy per FLOP against cuBLAS TF32's —
    beside its work per FLOP on the profiled launch: warp instructions, L2 and DRAM bytes."""
    base = ref.kernel(REFERENCE, size)
    rows = []
    for target in targets or ref.targets():
        k = ref.kernel(target, size)
        rows.append({"kernel": k.label, "SM clock MHz": k.sm_clock_mhz, "board W": k.power_w,
                     "TFLOPS (back to back)": k.tflops, "energy / FLOP vs cuBLAS TF32": k.energy_per_flop
                     / base.energy_per_flop, "warp instructions / kFLOP": k.warp_instructions_per_flop * 1e3,
                     "× cuBLAS TF32's": k.warp_instructions_per_flop / base.warp_instructions_per_flop,
                     "L2 bytes / FLOP": k.l2_bytes_per_flop,
                     "DRAM bytes / FLOP": k.dram_bytes_per_flop})
    return table(rows, {"SM clock MHz": "{:.0f}", "board W": "{:.0f}", "TFLOPS (back to back)": "{:.1f}",
                        "energy / FLOP vs cuBLAS TF32": "{:.2f}×", "warp instructions / kFLOP": "{:.2f}",
                        "× cuBLAS TF32's": "{:.2f}×", "L2 bytes / FLOP": "{:.4f}", "DRAM bytes / FLOP": "{:.4f}"})


def instruction_mix_table(ref: Reference, size: int, targets: list[str], top: int = 10) -> MarkdownTable:
    """The most executed SASS opcodes of each kernel, in warp instructions per kFLOP, side by side."""
    flop = 2.0 * size ** 3
    columns = {target: dict(ref.executed(target, size, top=10_000)) for target in targets}
    opcodes = []
    for target in targets:
        for opcode, _ in ref.executed(target, size, top):
            if opcode not in opcodes:
                opcodes.append(opcode)
    rows = [{"opcode": opcode, **{LABELS.get(t, t): columns[t].get(opcode, 0) / flop * 1e3 for t in targets}}
            for opcode in opcodes]
    return table(rows, {LABELS.get(t, t): "{:.3f}" for t in targets})


__all__ = ["Kernel", "Reference", "energy_table", "instruction_mix_table", "launch_table", "load", "load_all"]
