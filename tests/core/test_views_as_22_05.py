"""What scontrol shows of a job's request, as the twin's Slurm 22.05.8 showed it
(tests/live/sessions/divergences.out): the node range only with -N, memory per CPU or per
node, and the GPU request under the key of the option that asked for it."""

from __future__ import annotations

import pytest

from minislurm.cli.fmt.scontrol import show_job
from minislurm.core.cluster import simple_cluster
from minislurm.core.options import parse_options
from minislurm.core.state import ClusterState
from minislurm.core.views import job_view
from minislurm.sched.submit import build_jobs

NOW = 1_700_000_000.0


def shown(words: str, def_mem_per_cpu: int | None = 1000) -> list[str]:
    cfg = simple_cluster(2, cpus=8, mem=8000, gpus=4)
    cfg.def_mem_per_cpu = def_mem_per_cpu
    state = ClusterState(cfg)
    spec, _ = parse_options(words.split(), now=NOW)
    job = build_jobs(spec, state, first_id=1, user="u", now=NOW)[0]
    out = show_job(job_view(job, state), now=NOW)
    return [w for w in out.split() if w.split("=")[0] in ("NumNodes", "MinCPUsNode", "MinMemoryCPU",
                                                          "MinMemoryNode", "TresPerNode", "TresPerJob",
                                                          "TresPerTask")]


@pytest.mark.parametrize("words, fields", [
    ("", ["NumNodes=1", "MinCPUsNode=1", "MinMemoryCPU=1000M"]),
    ("-N2", ["NumNodes=2-2", "MinCPUsNode=1", "MinMemoryCPU=1000M"]),
    ("-N1-2", ["NumNodes=1-2", "MinCPUsNode=1", "MinMemoryCPU=1000M"]),
    ("-n4", ["NumNodes=1", "MinCPUsNode=1", "MinMemoryCPU=1000M"]),
    ("-N2 --mem=2G", ["NumNodes=2-2", "MinCPUsNode=1", "MinMemoryNode=2G"]),
    ("--mem-per-cpu=500", ["NumNodes=1", "MinCPUsNode=1", "MinMemoryCPU=500M"]),
    ("--gres=gpu:2", ["NumNodes=1", "MinCPUsNode=1", "MinMemoryCPU=1000M", "TresPerNode=gres:gpu:2"]),
    ("--gpus-per-node=1", ["NumNodes=1", "MinCPUsNode=1", "MinMemoryCPU=1000M", "TresPerNode=gres:gpu:1"]),
    ("--gpus=3", ["NumNodes=1", "MinCPUsNode=1", "MinMemoryCPU=1000M", "TresPerJob=gres:gpu:3"]),
    ("-n2 --gpus-per-task=1", ["NumNodes=1", "MinCPUsNode=1", "MinMemoryCPU=1000M", "TresPerTask=gres:gpu:1"]),
])
def test_a_pending_jobs_request_as_the_twin_shows_it(words, fields):
    assert shown(words) == fields


def test_without_def_mem_per_cpu_memory_is_per_node():
    assert shown("", def_mem_per_cpu=None) == ["NumNodes=1", "MinCPUsNode=1", "MinMemoryNode=0"]
