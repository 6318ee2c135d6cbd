"""slurm.conf: the lab files, man-page syntax, every error, warnings (gres.conf:
test_gresconf.py; rendering: test_slurmconf_render.py)."""

from __future__ import annotations

import dataclasses

import math
from pathlib import Path

import pytest

from minislurm.core.cluster import ClusterConfig, PriorityConfig, SchedulerConfig
from minislurm.core.gresconf import render_gres_conf
from minislurm.core.slurmconf import ConfigError, load, parse_slurm_conf, render_slurm_conf

LAB = Path(__file__).resolve().parents[2] / "data" / "conf" / "lab"
GPU_FILES = [f"/dev/nvidia{i}" for i in range(8)]


def parse(text: str, gres: str | None = None) -> ClusterConfig:
    return parse_slurm_conf(text, gres)


# --- the lab cluster --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def lab() -> ClusterConfig:
    return load(LAB / "slurm.conf")


def test_lab_nodes(lab):
    assert lab.cluster_name == "minislurm-lab"
    assert [n.name for n in lab.nodes] == ["gpu01", "gpu02", "gpu03", "gpu04"]
    for node in lab.nodes:
        assert (node.cpus, node.real_memory, node.gpus, node.gpu_type) == (32, 256000, 8, None)
        assert node.gpu_files == GPU_FILES
        assert node.gres == {} and node.state == "UNKNOWN"
    assert lab.gres_types == {"gpu"}


def test_lab_partitions(lab):
    gpu, debug = lab.partitions
    assert lab.partition(None) is gpu and gpu.default and not debug.default
    assert gpu.nodes == debug.nodes == ["gpu01", "gpu02", "gpu03", "gpu04"]
    assert (gpu.max_time, gpu.default_time, gpu.max_nodes) == (86400, 3600, math.inf)
    assert (debug.max_time, debug.default_time, debug.max_nodes) == (1800, 600, 2)
    assert (gpu.priority_tier, debug.priority_tier) == (1, 2)
    assert gpu.state == debug.state == "UP"


def test_lab_scheduler_priority_and_failure_settings(lab):
    assert lab.sched == SchedulerConfig("sched/backfill", "conservative", bf_interval=1,
                                        bf_window=86400, bf_resolution=5, bf_max_job_test=500,
                                        requeue_delay=5)
    prio = lab.priority
    assert prio.type == "priority/multifactor"
    assert (prio.weight_fairshare, prio.weight_age, prio.weight_jobsize,
            prio.weight_partition, prio.weight_qos) == (10000, 1000, 1000, 1000, 0)
    assert (prio.max_age, prio.decay_half_life, prio.calc_period) == (86400, 86400, 60)
    assert (lab.slurmd_timeout, lab.return_to_service, lab.job_requeue, lab.kill_wait) == \
        (10, 1, True, 5)
    assert (lab.def_mem_per_cpu, lab.def_mem_per_node) == (8000, None)
    assert lab.state_save_location == "/var/spool/slurmctld"


def test_lab_keys_for_real_slurm_are_kept_and_warned(lab):
    needed = {"AuthType": "auth/munge", "ProctrackType": "proctrack/linuxproc",
              "TaskPlugin": "task/none", "SelectType": "select/cons_tres",
              "SelectTypeParameters": "CR_Core_Memory", "SlurmdSpoolDir": "/var/spool/slurmd"}
    assert needed.items() <= lab.other.items()
    assert lab.other["SlurmctldHost"] == "slurmctld"
    warned = {w.split("key '")[1].split("'")[0] for w in lab.warnings}
    assert warned == set(lab.other) - {"SlurmctldHost"}
    path = str(LAB / "slurm.conf")
    assert all(w.startswith(f"{path} line ") and w.endswith("is not modelled by minislurm (ignored)")
               for w in lab.warnings)
    line = (LAB / "slurm.conf").read_text().splitlines().index("TaskPlugin=task/none") + 1
    assert f"{path} line {line}: key 'TaskPlugin' is not modelled by minislurm (ignored)" \
        in lab.warnings


def test_lab_file_round_trips(lab):
    text = render_slurm_conf(lab)
    assert "NodeName=gpu[01-04] CPUs=32 RealMemory=256000 Gres=gpu:8 State=UNKNOWN" in text
    back = parse(text, render_gres_conf(lab))
    back.warnings, expected = [], dataclasses.replace(lab, warnings=[])
    assert back == expected


# --- man-page style syntax --------------------------------------------------------------------

def test_man_page_examples():
    cfg = parse("GresTypes=gpu\n"
                "NodeName=tux[0-7] Gres=gpu:tesla:2\n"
                "PartitionName=debug Nodes=ALL Default=YES MaxTime=30\n")
    assert [n.name for n in cfg.nodes] == [f"tux{i}" for i in range(8)]
    assert all(n.gpus == 2 and n.gpu_type == "tesla" for n in cfg.nodes)
    (debug,) = cfg.partitions
    assert debug.nodes == [f"tux{i}" for i in range(8)]
    assert debug.default and debug.max_time == 30 * 60
    assert cfg.warnings == []


def test_default_lines_apply_to_later_lines_only():
    cfg = parse("NodeName=a CPUs=2\n"
                "NodeName=DEFAULT CPUs=16 RealMemory=64000 Weight=5\n"
                "NodeName=b[1-2]\n"
                "NodeName=c CPUs=4\n"
                "PartitionName=DEFAULT MaxTime=2:00:00 State=DOWN\n"
                "PartitionName=p1 Nodes=a,b[1-2]\n"
                "PartitionName=p2 Nodes=c MaxTime=INFINITE State=UP\n")
    a, b1, b2, c = cfg.nodes
    assert (a.cpus, a.real_memory, a.weight) == (2, 1, 1)
    assert (b1.cpus, b1.real_memory, b1.weight) == (b2.cpus, b2.real_memory, b2.weight) \
        == (16, 64000, 5)
    assert (c.cpus, c.real_memory, c.weight) == (4, 64000, 5)
    p1, p2 = cfg.partitions
    assert (p1.nodes, p1.max_time, p1.state) == (["a", "b1", "b2"], 7200, "DOWN")
    assert (p2.nodes, p2.max_time, p2.state) == (["c"], math.inf, "UP")


def test_default_node_lists_are_not_shared_between_nodes():
    cfg = parse("GresTypes=shard\nNodeName=DEFAULT Features=ib Gres=shard:4\nNodeName=x[1-2]\n")
    cfg.nodes[0].features.append("ssd")
    cfg.nodes[0].gres["shard"] = 1
    assert (cfg.nodes[1].features, cfg.nodes[1].gres) == (["ib"], {"shard": 4})


def test_comments_continuations_and_case_insensitive_keys():
    cfg = parse("# a comment line\n"
                "clustername=Lab   # trailing comment\n"
                "\n"
                "NODENAME=n[01-02] cpus=8 \\\n"
                "    realmemory=1000 \\\n"
                "    features=ib,nvlink\n"
                "partitionname=main nodes=n[01-02] default=yes maxtime=1-12\n")
    assert cfg.cluster_name == "lab"  # Slurm lower-cases the cluster name
    assert [(n.name, n.cpus, n.real_memory, n.features) for n in cfg.nodes] == \
        [("n01", 8, 1000, ["ib", "nvlink"]), ("n02", 8, 1000, ["ib", "nvlink"])]
    assert cfg.partitions[0].default and cfg.partitions[0].max_time == 36 * 3600
    assert cfg.warnings == []


def test_escaped_hash_quotes_and_spaces_around_equals():
    cfg = parse('StateSaveLocation = "/var/spool/my state"\nFoo=a\\#b\n')
    assert cfg.state_save_location == "/var/spool/my state"
    assert cfg.other == {"Foo": "a#b"}


def test_line_numbers_count_physical_lines():
    with pytest.raises(ConfigError, match=r"^slurm.conf line 4: expected Key=Value"):
        parse("NodeName=a \\\n  CPUs=4 \\\n  RealMemory=9\nBad\n")


@pytest.mark.parametrize("text, seconds", [
    ("30", 1800), ("30:00", 1800), ("1:00:00", 3600), ("2-0", 172800), ("1-12:30", 131400),
    ("1-00:00:00", 86400), ("90:30", 5460), ("INFINITE", math.inf), ("unlimited", math.inf),
])
def test_partition_times_in_slurm_formats(text, seconds):
    cfg = parse(f"PartitionName=p MaxTime={text} DefaultTime={text}")
    assert cfg.partitions[0].max_time == cfg.partitions[0].default_time == seconds


def test_partition_options():
    cfg = parse("NodeName=a\nPartitionName=p Nodes=a MaxNodes=UNLIMITED PriorityTier=3 "
                "PriorityJobFactor=7 OverSubscribe=EXCLUSIVE State=INACTIVE\n"
                "PartitionName=q Priority=4 MaxNodes=2 OverSubscribe=FORCE:4\n")
    p, q = cfg.partitions
    assert (p.max_nodes, p.priority_tier, p.priority_job_factor, p.exclusive, p.state) == \
        (math.inf, 3, 7, True, "INACTIVE")
    assert (q.priority_tier, q.priority_job_factor, q.max_nodes, q.exclusive, q.nodes) == \
        (4, 4, 2, False, [])
    assert cfg.warnings == ["slurm.conf line 3: OverSubscribe=FORCE:4 is not modelled by "
                            "minislurm (treated as NO)"]


def test_last_default_partition_wins_with_a_warning():
    cfg = parse("PartitionName=a Default=YES\nPartitionName=b Default=YES\n")
    assert [p.default for p in cfg.partitions] == [False, True]
    assert cfg.partition(None).name == "b"
    assert cfg.warnings == ["slurm.conf line 2: partition 'b' replaces 'a' as the default"]


def test_gres_variants():
    cfg = parse("GresTypes=gpu,shard,mps,bandwidth\n"
                "NodeName=a Gres=gpu:h100:4,shard:8\n"
                "NodeName=b Gres=gpu,mps:400,bandwidth:lustre:no_consume:4G\n"
                "NodeName=c Gres=gpu:tesla:2,gpu:kepler:2\n")
    a, b, c = cfg.nodes
    assert (a.gpus, a.gpu_type, a.gres) == (4, "h100", {"shard": 8})
    assert (b.gpus, b.gpu_type, b.gres) == (1, None, {"mps": 400, "bandwidth": 4 * 1024**3})
    assert (c.gpus, c.gpu_type) == (4, None)
    assert cfg.warnings == ["slurm.conf line 4: GPUs of several types are not modelled; "
                            "counted as one untyped pool"]


def test_forward_references_are_allowed():
    cfg = parse("PartitionName=p Nodes=g[1-2]\nNodeName=g[1-2] Gres=gpu:1\nGresTypes=gpu\n")
    assert cfg.partitions[0].nodes == ["g1", "g2"] and cfg.nodes[0].gpus == 1


def test_scheduler_and_priority_keys():
    cfg = parse("SchedulerType=sched/builtin\n"
                "SchedulerParameters=bf_interval=-1,bf_window=2880,bf_resolution=600,"
                "bf_max_job_test=50,requeue_delay=0,bf_continue,default_queue_depth=10\n"
                "PriorityType=priority/basic\nPriorityWeightQOS=5\nPriorityWeightAssoc=6\n"
                "PriorityDecayHalfLife=14-0\nPriorityMaxAge=12:00:00\nPriorityCalcPeriod=5\n"
                "PriorityFavorSmall=YES\nPriorityFlags=no_fair_tree,ACCRUE_ALWAYS\n"
                "DefMemPerNode=4000\nJobRequeue=0\nReturnToService=2\n")
    assert cfg.sched == SchedulerConfig("sched/builtin", "fifo", bf_interval=-1,
                                        bf_window=2880 * 60, bf_resolution=600,
                                        bf_max_job_test=50, requeue_delay=0)
    assert isinstance(cfg.sched.bf_max_job_test, int)
    assert cfg.priority == PriorityConfig("priority/basic", weight_qos=5, weight_assoc=6,
                                          decay_half_life=14 * 86400, max_age=43200,
                                          calc_period=300, favor_small=True,
                                          flags={"NO_FAIR_TREE", "ACCRUE_ALWAYS"})
    assert (cfg.def_mem_per_node, cfg.job_requeue, cfg.return_to_service) == (4000, False, 2)
    assert cfg.other == {"SchedulerParameters": "bf_continue,default_queue_depth=10"}
    assert cfg.warnings == [
        "slurm.conf line 2: SchedulerParameters item 'bf_continue' is not modelled by minislurm "
        "(ignored)",
        "slurm.conf line 2: SchedulerParameters item 'default_queue_depth=10' is not modelled "
        "by minislurm (ignored)"]


def test_decay_half_life_zero_means_no_decay():
    assert parse("PriorityDecayHalfLife=0").priority.decay_half_life == math.inf


@pytest.mark.parametrize("order", ["before", "after"])
def test_minislurm_directive_overrides_scheduler_type_anywhere(order):
    lines = ["SchedulerType=sched/backfill", "#minislurm: BackfillPolicy=easy"]
    cfg = parse("\n".join(lines if order == "after" else lines[::-1]))
    assert (cfg.sched.scheduler_type, cfg.sched.policy) == ("sched/backfill", "easy")
    assert cfg.warnings == []


def test_directive_is_a_comment_inside_a_continuation():
    cfg = parse("NodeName=a \\\n#minislurm: BackfillPolicy=fifo\nPartitionName=p\n")
    assert cfg.sched.policy == "conservative" and cfg.partitions[0].name == "p"


# --- warnings: unknown keys never crash ---------------------------------------------------------

def test_unknown_keys_are_kept_and_warned():
    cfg = parse("ClusterName=c\nTaskPlugin=task/affinity,task/cgroup\n"
                "NodeName=a Sockets=2 CoresPerSocket=8 CPUs=16\n"
                "PartitionName=p AllowQos=ml Nodes=a\n"
                "Include /etc/slurm/nodes.conf\n"
                "SlurmctldHost=ctl1\nSlurmctldHost=ctl2\n"
                "SomeFutureKey=1\nsomefuturekey=2\nKillWait=10\nKillWait=20\n")
    assert cfg.other == {"TaskPlugin": "task/affinity,task/cgroup",
                         "SlurmctldHost": "ctl1\nctl2", "SomeFutureKey": "2"}
    assert cfg.nodes[0].cpus == 16 and cfg.partitions[0].nodes == ["a"] and cfg.kill_wait == 20
    assert cfg.warnings == [
        "slurm.conf line 2: key 'TaskPlugin' is not modelled by minislurm (ignored)",
        "slurm.conf line 3: node key 'Sockets' is not modelled by minislurm (ignored)",
        "slurm.conf line 3: node key 'CoresPerSocket' is not modelled by minislurm (ignored)",
        "slurm.conf line 4: partition key 'AllowQos' is not modelled by minislurm (ignored)",
        "slurm.conf line 5: Include is not supported by minislurm (ignored)",
        "slurm.conf line 8: key 'SomeFutureKey' is not modelled by minislurm (ignored)",
        "slurm.conf line 9: somefuturekey specified more than once, latest value used",
        "slurm.conf line 9: key 'somefuturekey' is not modelled by minislurm (ignored)",
        "slurm.conf line 11: KillWait specified more than once, latest value used",
    ]
    assert "SlurmctldHost=ctl1\nSlurmctldHost=ctl2\n" in render_slurm_conf(cfg)


def test_other_warnings():
    cfg = parse("DefMemPerCPU=100\nDefMemPerNode=200\nPartitionName=p MaxTime=10 DefaultTime=20\n")
    assert cfg.warnings == ["slurm.conf line 3: partition 'p': DefaultTime exceeds MaxTime",
                            "slurm.conf: DefMemPerCPU and DefMemPerNode are mutually exclusive "
                            "in Slurm"]


# --- errors, with their exact messages ----------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("ClusterName=x\nFoo\n", "slurm.conf line 2: expected Key=Value, found 'Foo'"),
    ("NodeName=a CPUs=4 oops", "slurm.conf line 1: expected Key=Value, found 'oops'"),
    ("ClusterName=", "slurm.conf line 1: expected Key=Value, found 'ClusterName='"),
    ("NodeName=a CPUs=many", "slurm.conf line 1: CPUs=many: expected a whole number >= 1"),
    ("NodeName=a RealMemory=0", "slurm.conf line 1: RealMemory=0: expected a whole number >= 1"),
    ("NodeName=a Weight=1.5", "slurm.conf line 1: Weight=1.5: expected a whole number"),
    ("SlurmdTimeout=5s", "slurm.conf line 1: SlurmdTimeout=5s: expected a whole number"),
    ("NodeName=gpu[01-", "slurm.conf line 1: NodeName=gpu[01- is not a valid hostlist"),
    ("NodeName=gpu[04-01]", "slurm.conf line 1: NodeName=gpu[04-01] is not a valid hostlist"),
    ("NodeName=a State=BUSY", "slurm.conf line 1: State=BUSY: expected one of UNKNOWN, IDLE, "
     "DOWN, DRAIN, FAIL, FAILING, FUTURE, CLOUD"),
    ("NodeName=a Gres=gpu:2", "slurm.conf line 1: GRES 'gpu' is not declared in GresTypes"),
    ("GresTypes=gpu\nNodeName=a Gres=gpu:2,mps:100",
     "slurm.conf line 2: GRES 'mps' is not declared in GresTypes"),
    ("GresTypes=gpu\nNodeName=a Gres=gpu:2,gpu:a100:2",
     "slurm.conf line 2: Gres=gpu:2,gpu:a100:2: gpu is configured both with and without a type"),
    ("GresTypes=gpu\nNodeName=a Gres=gpu:a:b:2",
     "slurm.conf line 2: Gres=gpu:a:b:2: 'gpu:a:b:2' is not name[:type][:count]"),
    ("GresTypes=gpu\nNodeName=a Gres=gpu:2X",
     "slurm.conf line 2: Gres=gpu:2X: '2X' is not a GRES count"),
    ("NodeName=gpu[01-04]\nPartitionName=p Nodes=gpu[01-05]",
     "slurm.conf line 2: partition 'p' names unknown node 'gpu05'"),
    ("PartitionName=p Nodes=a[", "slurm.conf line 1: Nodes=a[ is not a valid hostlist"),
    ("PartitionName=p MaxTime=soon",
     "slurm.conf line 1: MaxTime=soon: expected a Slurm time such as 30, 1:00:00, 2-0 or UNLIMITED"),
    ("PartitionName=p Default=MAYBE", "slurm.conf line 1: Default=MAYBE: expected YES or NO"),
    ("PartitionName=p State=OPEN",
     "slurm.conf line 1: State=OPEN: expected one of UP, DOWN, DRAIN, INACTIVE"),
    ("PartitionName=p MaxNodes=0", "slurm.conf line 1: MaxNodes=0: expected a whole number >= 1"),
    ("PartitionName=p OverSubscribe=SOMETIMES", "slurm.conf line 1: OverSubscribe=SOMETIMES: "
     "expected one of EXCLUSIVE, NO, YES, FORCE"),
    ("NodeName=a\nNodeName=b,a", "slurm.conf line 2: node 'a' is defined more than once"),
    ("PartitionName=p\nPartitionName=p", "slurm.conf line 2: partition 'p' is defined more than once"),
    ("CPUs=4 NodeName=a", "slurm.conf line 1: NodeName= must start its line"),
    ("SchedulerType=sched/gang",
     "slurm.conf line 1: SchedulerType=sched/gang: expected sched/backfill or sched/builtin"),
    ("SchedulerParameters=bf_window=1d",
     "slurm.conf line 1: bf_window=1d: expected a whole number >= -1"),
    ("PriorityType=priority/fancy", "slurm.conf line 1: PriorityType=priority/fancy: "
     "expected priority/multifactor or priority/basic"),
    ("PriorityFavorSmall=1", "slurm.conf line 1: PriorityFavorSmall=1: expected YES or NO"),
    ("ReturnToService=3", "slurm.conf line 1: ReturnToService=3: expected one of 0, 1, 2"),
    ("JobRequeue=yes", "slurm.conf line 1: JobRequeue=yes: expected 0 or 1"),
    ("FirstJobId=0", "slurm.conf line 1: FirstJobId=0: expected a whole number >= 1"),
    ("#minislurm: BackfillPolicy=greedy",
     "slurm.conf line 1: BackfillPolicy=greedy: expected one of easy, conservative, fifo"),
    ("#minislurm: Backfill=easy",
     "slurm.conf line 1: unknown #minislurm setting 'Backfill' (known: BackfillPolicy)"),
])
def test_errors(text, message):
    with pytest.raises(ConfigError) as err:
        parse(text)
    assert str(err.value) == message
    assert isinstance(err.value, ValueError)


def test_errors_name_the_given_path():
    with pytest.raises(ConfigError, match=r"^/etc/slurm/slurm.conf line 1: expected Key=Value"):
        parse_slurm_conf("Foo", path="/etc/slurm/slurm.conf")


def test_a_slurm_conf_without_priority_type_is_fifo_as_in_slurm():
    """Slurm's default PriorityType is priority/basic; minislurm's own files always name theirs."""
    text = "NodeName=n1 CPUs=4\nPartitionName=p Nodes=n1 Default=YES\n"
    assert parse_slurm_conf(text).priority.type == "priority/basic"
    assert parse_slurm_conf(text + "PriorityType=priority/multifactor\n").priority.type == "priority/multifactor"
    lab = parse_slurm_conf(text + "PriorityType=priority/multifactor\n")
    assert parse_slurm_conf(render_slurm_conf(lab)).priority.type == "priority/multifactor"


def test_max_script_size_is_read_bounded_and_written_back():
    cfg = parse("SchedulerParameters=max_script_size=1000,bf_continue\n")
    assert cfg.sched.max_script_size == 1000 and cfg.other == {"SchedulerParameters": "bf_continue"}
    assert "max_script_size=1000" in render_slurm_conf(cfg)
    assert parse("SchedulerParameters=bf_interval=5\n").sched.max_script_size == 4 * 1024 * 1024
    with pytest.raises(ConfigError, match="max_script_size cannot exceed 512 MB"):
        parse(f"SchedulerParameters=max_script_size={512 * 1024 * 1024 + 1}\n")
    cfg = parse("SchedulerParameters=max_script_size=8388608\n")  # more than the API takes
    assert cfg.sched.max_script_size == 4 * 1024 * 1024
    assert cfg.warnings == ["slurm.conf line 1: max_script_size above 4194304 is not modelled by minislurm "
                            "(its API takes no larger script; 4194304 used)"]


# --- who may use what (issue 21): AccountingStorageEnforce, AllowAccounts, AllowGroups ----------

def test_enforcement_and_partition_access_are_read_and_written_back():
    cfg = parse("AccountingStorageEnforce=safe\nNodeName=a CPUs=4\n"
                "PartitionName=p Nodes=a AllowAccounts=ml,vision AllowGroups=students\n"
                "PartitionName=q Nodes=a AllowAccounts=ALL\n")
    assert cfg.accounting_enforce == {"associations", "limits", "safe"}  # safe implies both, as in Slurm
    assert (cfg.partitions[0].allow_accounts, cfg.partitions[0].allow_groups) == (["ml", "vision"], ["students"])
    assert (cfg.partitions[1].allow_accounts, cfg.partitions[1].allow_groups) == (None, None)
    assert not cfg.warnings
    again = parse(render_slurm_conf(cfg))
    assert again.accounting_enforce == cfg.accounting_enforce and again.partitions == cfg.partitions
    assert parse("AccountingStorageEnforce=limits\n").accounting_enforce == {"associations", "limits"}
    assert parse("AccountingStorageEnforce=0\n").accounting_enforce == set()
    with pytest.raises(ConfigError, match="AccountingStorageEnforce=assoc: unknown item 'assoc'"):
        parse("AccountingStorageEnforce=assoc\n")
