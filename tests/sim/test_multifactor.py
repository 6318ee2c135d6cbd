"""priority/multifactor in a replay, as the controller applies it: fair share charged when a run
ends, priorities recomputed every PriorityCalcPeriod on the replay's clock."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from minislurm.cli.main import main
from minislurm.core.cluster import simple_cluster
from minislurm.sim.engine import Simulator
from minislurm.sim.traces import TraceJob


def cluster(priority_type: str):
    """One 8-CPU node; priority from fair share alone, recomputed every minute."""
    cfg = simple_cluster(1, cpus=8, mem=1000, gpus=0)
    cfg.priority.type = priority_type
    cfg.priority.weight_fairshare, cfg.priority.calc_period = 10_000, 60.0
    return cfg


# alice's A holds the node 0-100 s, dave's Z waits for it (100-300 s).  alice's B (t=50) and bob's
# C (t=60) are submitted before A ends, when nobody has used anything: their priorities are equal,
# and B, the older, is first.  A's end charges alice 800 CPU-seconds; the recalculation at t=120
# puts bob's C above alice's B, so C takes the node when Z ends.
JOBS = [TraceJob(1, 0.0, 100.0, 600.0, 1, 8, 0, user="alice", account="physics"),
        TraceJob(2, 1.0, 200.0, 600.0, 1, 8, 0, user="dave", account="bio"),
        TraceJob(3, 50.0, 10.0, 600.0, 1, 8, 0, user="alice", account="physics"),
        TraceJob(4, 60.0, 10.0, 600.0, 1, 8, 0, user="bob", account="physics")]


def starts(priority_type: str) -> dict[int, float]:
    sim = Simulator(cluster(priority_type), [dataclasses.replace(j) for j in JOBS])
    sim.run()
    return {int(sim.state.jobs[r.job_id].name): r.start for r in sim.records.values()}


def test_fair_share_charged_at_the_end_reorders_the_queue_at_the_next_recalculation() -> None:
    assert starts("priority/multifactor") == {1: 0.0, 2: 100.0, 4: 300.0, 3: 310.0}
    assert starts("priority/basic") == {1: 0.0, 2: 100.0, 3: 300.0, 4: 310.0}  # first come, first served


def test_a_replay_that_can_go_no_further_still_ends_under_multifactor() -> None:
    """The recalculation ticks are no event that keeps a stuck replay going for ever."""
    cfg = cluster("priority/multifactor")
    cfg.nodes[0].state = "DOWN"  # configured DOWN, and nothing will bring it back
    sim = Simulator(cfg, [TraceJob(1, 0.0, 10.0, 60.0, 1, 1, 0)])
    try:
        sim.run()
    except ValueError as exc:
        assert "can never start" in str(exc)
    else:
        raise AssertionError("a job that can never start was not reported")


def test_sim_config_honours_its_priority_type(tmp_path: Path, capsys) -> None:
    """``minislurm sim --config slurm.conf`` replays with the file's PriorityType."""
    trace = tmp_path / "t.csv"
    trace.write_text("id,submit,runtime,limit,nodes,gpus_per_node,cpus_per_node,user,account,partition\n"
                     + "".join(f"{j.job_id},{j.submit:g},{j.runtime:g},10,1,0,8,{j.user},{j.account},\n"
                               for j in JOBS))
    got = {}
    for kind in ("multifactor", "basic"):
        conf = tmp_path / kind / "slurm.conf"
        conf.parent.mkdir()
        conf.write_text(f"PriorityType=priority/{kind}\nPriorityWeightFairshare=10000\nPriorityCalcPeriod=1\n"
                        "NodeName=n1 CPUs=8 RealMemory=1000 State=IDLE\n"
                        "PartitionName=p Nodes=n1 Default=YES MaxTime=UNLIMITED State=UP\n")
        assert main(["sim", "--trace", str(trace), "--config", str(conf), "--no-charts", "--no-progress",
                     "--out", str(tmp_path / kind / "out")]) == 0
        capsys.readouterr()
        lines = (tmp_path / kind / "out" / "jobs.csv").read_text().splitlines()
        head = lines[0].split(",")
        got[kind] = {int(r[head.index("id")]): float(r[head.index("start")])
                     for r in (line.split(",") for line in lines[1:])}
    assert got["multifactor"][4] < got["multifactor"][3]  # bob's C before alice's B
    assert got["basic"][3] < got["basic"][4]
