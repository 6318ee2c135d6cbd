"""What a step's GPUs do: utilisation and memory, read through NVML when the GPUs are real.

Slurm does the same where nodes detect their GPUs through NVML (``AutoDetect=nvml``): the
step's usage keeps each GPU's utilisation and memory as the TRES ``gres/gpuutil`` and
``gres/gpumem`` (accounted with ``gres/gpu`` in ``AccountingStorageTRES``).  minislurm's GPUs
are fake unless the node has NVIDIA GPUs, and no figure is made up for a fake one: the step
says why there is none (:attr:`GpuProbe.note`), and ``jobstats`` prints "not measured: ...".

NVML comes from the optional ``nvidia-ml-py`` package (``pip install minislurm[gpu]``: the
``pynvml`` module), imported on first use, so a node without it starts as fast as before.  A
GPU is measured only when NVML sees at least as many devices as the node has GPUs: the node's
GPU index is then the NVML index (the order ``nvidia-smi`` lists them).  Simplification: the
agents of a local cluster share their host's GPUs, so two local nodes both measure GPU 0 of
the one host.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

_NOT_LOADED = object()
_lib = _NOT_LOADED  # pynvml, initialised; None where it cannot be


def library():
    """pynvml after nvmlInit, or None (not installed, or no driver)."""
    global _lib
    if _lib is _NOT_LOADED:
        try:
            import pynvml
            pynvml.nvmlInit()
            _lib = pynvml
        except Exception:  # ImportError, or NVMLError when there is no driver or no device
            _lib = None
    return _lib


def why_not(node_gpus: int) -> str | None:
    """Why this node's GPUs cannot be measured; None when they can."""
    lib = library()
    if lib is None:
        driver = os.path.exists("/dev/nvidiactl")
        return "NVML is not installed (pip install nvidia-ml-py)" if driver else "no real GPU"
    try:
        found = lib.nvmlDeviceGetCount()
    except lib.NVMLError:
        return "no real GPU"
    if found < node_gpus:
        return f"no real GPU (this node has {node_gpus} GPUs, NVML finds {found})"
    return None


@dataclass
class GpuUse:
    """One GPU so far: the mean of the utilisation samples (%), the peak memory used (KiB)."""

    total_kib: int
    util_sum: float = 0.0
    samples: int = 0
    peak_kib: int = 0

    def view(self) -> dict:
        mean = self.util_sum / self.samples if self.samples else 0.0
        return {"util": round(mean, 1), "mem": self.peak_kib, "total": self.total_kib, "samples": self.samples}


@dataclass
class GpuProbe:
    """Samples the GPUs ``indices`` of a node that has ``node_gpus``; ``note`` says why not."""

    indices: tuple[int, ...]
    node_gpus: int
    note: str | None = None
    used: dict[int, GpuUse] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._handles = {}
        if not self.indices:
            return
        self.note = why_not(self.node_gpus)
        if self.note is None:
            lib = library()
            for i in self.indices:
                handle = lib.nvmlDeviceGetHandleByIndex(i)
                self._handles[i] = handle
                self.used[i] = GpuUse(lib.nvmlDeviceGetMemoryInfo(handle).total // 1024)

    def take(self) -> None:
        lib = library()
        for i, handle in self._handles.items():
            try:
                util = lib.nvmlDeviceGetUtilizationRates(handle).gpu
                mem = lib.nvmlDeviceGetMemoryInfo(handle).used // 1024
            except lib.NVMLError:
                continue  # a GPU that fell off the bus is not measured this time
            use = self.used[i]
            use.util_sum += util
            use.samples += 1
            use.peak_kib = max(use.peak_kib, mem)

    def view(self) -> dict:
        """``{"gpus": {index: figures}}``, ``{"gpu_note": why}``, or nothing (no GPUs)."""
        if self.note is not None:
            return {"gpu_note": self.note}
        return {"gpus": {str(i): u.view() for i, u in self.used.items()}} if self.used else {}
