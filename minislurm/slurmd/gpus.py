"""Which GPUs a node has: the configured count (fake GPUs, the default), or what nvidia-smi finds."""

from __future__ import annotations

import shutil
import subprocess


def detect_nvidia() -> int:
    """The number of NVIDIA GPUs ``nvidia-smi -L`` lists; 0 without a driver."""
    if shutil.which("nvidia-smi") is None:
        return 0
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))
