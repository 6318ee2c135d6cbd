"""What the trace tests share: where the traces are, and a few units."""

from __future__ import annotations

from pathlib import Path

import pytest

from minislurm.sim.traces import TraceJob

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data" / "traces"
SHARED = ROOT.parent / "shared" / "traces"
HPC2N = DATA / "alea_hpc2n.swf"
PHILLY = DATA / "rfold_philly_trace.csv"
LESSON = DATA / "lesson_small.csv"
OPENB = SHARED / "alibaba-openb" / "openb_pod_list_default.csv"

needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/traces not present")

MIN, HOUR, DAY = 60.0, 3600.0, 86400.0


def by_id(jobs: list[TraceJob]) -> dict[int, TraceJob]:
    return {j.job_id: j for j in jobs}
