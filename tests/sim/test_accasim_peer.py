"""bench/accasim_peer.py hands AccaSim the jobs minislurm replays: read back by minislurm's own
SWF reader, with a GPU as a core, the file gives the same jobs (AccaSim itself is not installed
here; the benchmark runs it in a virtual environment of its own)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from accasim_peer import TRACE, write_swf  # noqa: E402

from minislurm.sim.traces import read_swf, read_trace  # noqa: E402


def test_the_swf_file_holds_the_replayed_jobs(tmp_path):
    jobs = read_trace(str(TRACE), cores_per_node=32, gpus_per_node=8, limit=3000).jobs
    write_swf(tmp_path / "jobs.swf", jobs)
    back = read_swf(str(tmp_path / "jobs.swf"), cores_per_node=8).jobs
    assert len(back) == len(jobs) == 3000
    assert max(j.nodes for j in jobs) > 1  # some span nodes
    for job, swf in zip(jobs, back):
        assert (swf.submit, swf.time_limit) == (int(job.submit), int(job.time_limit))
        assert abs(swf.runtime - job.runtime) <= 0.5
        assert (swf.nodes, swf.cpus_per_node) == (job.nodes, job.gpus_per_node)  # a GPU is a core
