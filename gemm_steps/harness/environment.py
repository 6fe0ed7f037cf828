"""Where a result was measured: every benchmark record carries this, and every plot's title shows it."""

from __future__ import annotations

import datetime as _dt
import platform
import re
import shutil
import subprocess
from importlib import metadata

from ..toolkit.backend import SIMULATOR, describe


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _nvidia_smi() -> dict:
    """Clocks and driver as nvidia-smi reads them now (empty where nvidia-smi is missing)."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return {}
    fields = ["name", "driver_version", "clocks.sm", "clocks.max.sm", "clocks.mem", "clocks.max.mem",
              "power.limit", "temperature.gpu"]
    try:
        out = subprocess.run([exe, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return {}
    if not out:
        return {}
    values = [v.strip() for v in out[0].split(",")]
    return {f"smi_{k.replace('.', '_')}": v for k, v in zip(fields, values)}


def fp32_peak_tflops(sm_count: int, clock_mhz: float, cc: tuple[int, int]) -> float | None:
    """FP32 peak = SMs × FP32 lanes per SM × 2 FLOP per FMA × clock. Lanes: 128 per SM on Ampere/Ada/Hopper."""
    lanes = {(7, 0): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128, (9, 0): 128}.get(tuple(cc))
    if lanes is None and cc[0] >= 10:
        lanes = 128
    if lanes is None or not clock_mhz:
        return None
    return sm_count * lanes * 2 * clock_mhz * 1e6 / 1e12


def environment() -> dict:
    """GPU name, SM count, clocks, driver, library versions — everything a result must say about where it ran."""
    env = {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "backend": describe(),
        "simulator": SIMULATOR,
        "python": platform.python_version(),
        "numba_cuda": _version("numba-cuda"),
        "numba": _version("numba"),
        "numpy": _version("numpy"),
        "nvmath_python": _version("nvmath-python"),
        "host": platform.node(),
    }
    if SIMULATOR:
        env["gpu"] = "Numba CUDA simulator (no GPU)"
        return env
    from numba import cuda

    dev = cuda.get_current_device()
    cc = dev.compute_capability
    clock_mhz = dev.CLOCK_RATE / 1000  # the SM's rated boost clock, kHz → MHz
    env.update({
        "gpu": dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name),
        "compute_capability": f"{cc[0]}.{cc[1]}",
        "sm_count": dev.MULTIPROCESSOR_COUNT,
        "sm_clock_max_mhz": clock_mhz,
        "mem_clock_max_mhz": dev.MEMORY_CLOCK_RATE / 1000,
        "l2_bytes": dev.L2_CACHE_SIZE,
        "shared_memory_per_block_optin": dev.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        "driver_cuda_version": ".".join(map(str, cuda.cudadrv.driver.driver.get_version())),
        "fp32_peak_tflops_estimate": fp32_peak_tflops(dev.MULTIPROCESSOR_COUNT, clock_mhz, cc),
    })
    env.update(_nvidia_smi())
    from .cublas import tf32_override, version

    env["cublas_version"] = version()
    env["tf32_override"] = tf32_override()
    return env


def file_slug(text: str) -> str:
    """A GPU name as it appears in result file names: ``"NVIDIA H200"`` → ``"nvidia-h200"``."""
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")


def short_label(env: dict) -> str:
    """One line for a plot title: GPU, SMs, driver, CUDA and cuBLAS versions, numba-cuda, date."""
    if env.get("simulator"):
        return f"Numba CUDA simulator · numba-cuda {env.get('numba_cuda')}"
    parts = [env.get("gpu", "?"), f"{env.get('sm_count', '?')} SMs"]
    if env.get("smi_driver_version"):
        parts.append(f"driver {env['smi_driver_version']}")
    if env.get("driver_cuda_version"):
        parts.append(f"CUDA {env['driver_cuda_version']}")
    if env.get("cublas_version"):
        parts.append(f"cuBLAS {cublas_version_text(env['cublas_version'])}")
    parts.append(f"numba-cuda {env.get('numba_cuda')}")
    parts.append(str(env.get("date", ""))[:10])
    return " · ".join(parts)


def cublas_version_text(version) -> str:
    """cuBLAS's integer version (130100) as text (13.1.0); anything else as it is."""
    try:
        number = int(version)
    except (TypeError, ValueError):
        return str(version)
    return f"{number // 10000}.{number % 10000 // 100}.{number % 100}"
