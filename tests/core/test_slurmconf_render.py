"""Rendering slurm.conf and gres.conf: identical nodes grouped, what real Slurm cannot say kept
as a directive, and every configuration reads back as it was written."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from minislurm.core.cluster import (ClusterConfig, NodeConfig, PartitionConfig, PriorityConfig,
                                    SchedulerConfig, simple_cluster)
from minislurm.core.gresconf import render_gres_conf
from minislurm.core.slurmconf import parse_slurm_conf as parse
from minislurm.core.slurmconf import render_slurm_conf

def test_render_groups_consecutive_identical_nodes():
    cfg = simple_cluster(6, prefix="gpu")
    cfg.nodes[4].weight = 10
    text = render_slurm_conf(cfg)
    node_lines = [line for line in text.splitlines() if line.startswith("NodeName=")]
    assert node_lines == [
        "NodeName=gpu[01-04] CPUs=32 RealMemory=256000 Gres=gpu:8 State=IDLE",
        "NodeName=gpu05 CPUs=32 RealMemory=256000 Gres=gpu:8 Weight=10 State=IDLE",
        "NodeName=gpu06 CPUs=32 RealMemory=256000 Gres=gpu:8 State=IDLE"]
    assert "PartitionName=gpu Nodes=ALL Default=YES MaxTime=UNLIMITED State=UP" in text
    back = parse(text)
    assert back == cfg and back.warnings == []


def test_render_writes_the_policy_real_slurm_cannot_express():
    cfg = simple_cluster(2, policy="easy")
    assert "SchedulerType=sched/backfill\n#minislurm: BackfillPolicy=easy\n" in render_slurm_conf(cfg)
    assert parse(render_slurm_conf(cfg)).sched.policy == "easy"


NAMES = st.from_regex(r"[a-z][a-z0-9-]{0,11}", fullmatch=True)
MINUTES = st.integers(1, 60 * 24 * 30).map(lambda m: m * 60.0)


@st.composite
def clusters(draw) -> ClusterConfig:
    nodes: list[NodeConfig] = []
    for prefix in draw(st.lists(st.sampled_from(["gpu", "cpu", "node", "dgx"]), min_size=1,
                                max_size=3, unique=True)):
        width, start, count = draw(st.integers(1, 3)), draw(st.integers(0, 20)), draw(st.integers(1, 5))
        gpus = draw(st.sampled_from([0, 1, 2, 4, 8]))
        attrs = dict(cpus=draw(st.integers(1, 256)), real_memory=draw(st.integers(1, 2_000_000)),
                     gpus=gpus, gpu_type=draw(st.sampled_from([None, "a100", "h100"])) if gpus else None,
                     gres=draw(st.sampled_from([{}, {"shard": 8}, {"mps": 100, "shard": 2}])),
                     weight=draw(st.integers(1, 100)),
                     features=draw(st.lists(st.sampled_from(["ib", "nvlink", "ssd"]), unique=True,
                                            max_size=2)),
                     state=draw(st.sampled_from(["UNKNOWN", "IDLE", "DOWN", "DRAIN", "FUTURE"])))
        files = [f"/dev/nvidia{i}" for i in range(gpus)] if draw(st.booleans()) else []
        odd = draw(st.integers(-1, count - 1))  # one node that differs splits the NodeName line
        for i in range(count):
            nodes.append(NodeConfig(f"{prefix}{start + i:0{width}d}", **{**attrs, "gres": dict(attrs["gres"]),
                                    "weight": attrs["weight"] + (i == odd), "gpu_files": list(files)}))
    names = [n.name for n in nodes]
    parts = []
    part_names = draw(st.lists(st.sampled_from(["gpu", "debug", "long", "Batch"]), min_size=1,
                               max_size=3, unique=True))
    default = draw(st.integers(-1, len(part_names) - 1))
    for k, name in enumerate(part_names):
        max_time = draw(st.one_of(st.just(math.inf), MINUTES))
        default_time = draw(st.one_of(st.none(), MINUTES.filter(lambda t: t <= max_time)))
        parts.append(PartitionConfig(
            name, nodes=draw(st.one_of(st.just(names), st.lists(st.sampled_from(names), unique=True))),
            default=k == default, max_time=max_time, default_time=default_time,
            max_nodes=draw(st.one_of(st.just(math.inf), st.integers(1, 64))),
            state=draw(st.sampled_from(["UP", "DOWN", "DRAIN", "INACTIVE"])),
            priority_tier=draw(st.integers(0, 10)), priority_job_factor=draw(st.integers(0, 100)),
            exclusive=draw(st.booleans())))
    gres_types = {"gpu" for n in nodes if n.gpus} | {g for n in nodes for g in n.gres}
    sched = SchedulerConfig(
        draw(st.sampled_from(["sched/backfill", "sched/builtin"])),
        draw(st.sampled_from(["conservative", "easy", "fifo"])),
        bf_interval=float(draw(st.integers(-1, 300))), bf_window=draw(MINUTES),
        bf_resolution=float(draw(st.integers(1, 3600))), bf_max_job_test=draw(st.integers(1, 10_000)),
        requeue_delay=float(draw(st.integers(0, 600))), max_script_size=draw(st.integers(0, 4 * 1024 * 1024)))
    weights = st.integers(0, 100_000)
    prio = PriorityConfig(
        draw(st.sampled_from(["priority/multifactor", "priority/basic"])),
        *(draw(weights) for _ in range(6)),
        decay_half_life=draw(st.one_of(st.just(math.inf), MINUTES)), max_age=draw(MINUTES),
        calc_period=draw(MINUTES), favor_small=draw(st.booleans()),
        flags=set(draw(st.lists(st.sampled_from(["NO_FAIR_TREE", "ACCRUE_ALWAYS",
                                                 "SMALL_RELATIVE_TO_TIME"]), unique=True))))
    mem = draw(st.sampled_from(["cpu", "node", None]))
    return ClusterConfig(
        cluster_name=draw(NAMES), nodes=nodes, partitions=parts, gres_types=gres_types,
        sched=sched, priority=prio, slurmd_timeout=float(draw(st.integers(0, 600))),
        return_to_service=draw(st.integers(0, 2)), job_requeue=draw(st.booleans()),
        kill_wait=float(draw(st.integers(0, 300))), first_job_id=draw(st.integers(1, 10**6)),
        def_mem_per_cpu=draw(st.integers(1, 10**6)) if mem == "cpu" else None,
        def_mem_per_node=draw(st.integers(1, 10**6)) if mem == "node" else None,
        state_save_location=draw(st.sampled_from(["/var/spool/slurmctld", "/srv/state"])))


@settings(max_examples=200, deadline=None)
@given(clusters())
def test_render_then_parse_round_trips(cfg):
    text, gres = render_slurm_conf(cfg), render_gres_conf(cfg)
    back = parse(text, gres)
    assert back.warnings == []  # everything render writes is modelled
    assert back == cfg
