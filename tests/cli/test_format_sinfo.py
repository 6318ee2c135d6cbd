"""sinfo's text (see minislurm/cli/fmt/sinfo.py for the sources)."""

from minislurm.cli.fmt.sinfo import format_partitions
from minislurm.core.cluster import simple_cluster
from minislurm.core.job import Allocation
from minislurm.core.state import ClusterState
from minislurm.core.views import node_view, partition_view

NOW = 1_709_294_400.0  # 2024-03-01T12:00:00 UTC


def man_page_cluster():
    parts = [{"name": "batch", "default": False, "state": "UP", "max_time": None, "nodes": "adev[8-15]"},
             {"name": "debug", "default": True, "state": "UP", "max_time": 1800.0, "nodes": "adev[0-7]"}]
    nodes = [{"name": f"adev{i}", "state": "alloc" if i in (8, 9) else "idle", "flags": [], "cpus": 2,
              "alloc_cpus": 2 if i in (8, 9) else 0, "real_memory": 3448, "partitions": []}
             for i in range(16)]
    return parts, nodes


def test_man_page_example():
    assert format_partitions(*man_page_cluster()) == (
        "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n"
        "batch        up   infinite      2  alloc adev[8-9]\n"
        "batch        up   infinite      6   idle adev[10-15]\n"
        "debug*       up      30:00      8   idle adev[0-7]\n")


def test_partition_column_grows_and_states_carry_flags():
    parts, nodes = man_page_cluster()
    parts[0]["name"] = "long-partition-name"
    parts[1]["max_time"] = 86400.0 + 3600
    nodes[3].update(state="down", flags=["NOT_RESPONDING"])
    nodes[4].update(state="idle", flags=["NOT_RESPONDING"])
    nodes[5].update(state="drain")
    nodes[6].update(state="drng", alloc_cpus=1)
    nodes[7].update(state="mix", alloc_cpus=1)
    assert format_partitions(parts, nodes, noheader=True) == (
        "long-partition-name    up   infinite      2  alloc adev[8-9]\n"
        "long-partition-name    up   infinite      6   idle adev[10-15]\n"
        "debug*                 up 1-01:00:00      1  idle* adev4\n"
        "debug*                 up 1-01:00:00      1  down* adev3\n"
        "debug*                 up 1-01:00:00      1   drng adev6\n"
        "debug*                 up 1-01:00:00      1  drain adev5\n"
        "debug*                 up 1-01:00:00      1    mix adev7\n"
        "debug*                 up 1-01:00:00      3   idle adev[0-2]\n")


def test_summarize():
    parts, nodes = man_page_cluster()
    nodes[0].update(state="drain")
    assert format_partitions(parts, nodes, summarize=True) == (
        "PARTITION AVAIL  TIMELIMIT   NODES(A/I/O/T) NODELIST\n"
        "batch        up   infinite          2/6/0/8 adev[8-15]\n"
        "debug*       up      30:00          0/7/1/8 adev[0-7]\n")


def test_node_oriented_rows_one_per_node_and_partition():
    parts, nodes = man_page_cluster()
    parts[0]["nodes"] = "adev[7-15]"  # adev7 in both partitions
    nodes = nodes[6:10]
    assert format_partitions(parts, nodes, node_oriented=True) == (
        "NODELIST   NODES PARTITION STATE \n"
        "adev6          1    debug* idle  \n"
        "adev7          1     batch idle  \n"
        "adev7          1    debug* idle  \n"
        "adev8          1     batch alloc \n"
        "adev9          1     batch alloc \n")


def test_node_oriented_long():
    parts, nodes = man_page_cluster()
    nodes[8].update(gres="gpu:8", reason=None)
    out = format_partitions(parts, nodes[8:9], node_oriented=True, long=True, now=NOW)
    assert out == (
        "Fri Mar  1 12:00:00 2024\n"
        "NODELIST   NODES PARTITION       STATE CPUS    S:C:T MEMORY TMP_DISK WEIGHT AVAIL_FE REASON              \n"
        "adev8          1     batch   allocated 2       2:1:1   3448        0      1   (null) none                \n")


def test_long_partition_format():
    assert format_partitions(*man_page_cluster(), long=True, now=NOW) == (
        "Fri Mar  1 12:00:00 2024\n"
        "PARTITION AVAIL  TIMELIMIT   JOB_SIZE ROOT OVERSUBS     GROUPS  NODES       STATE RESERVATION NODELIST\n"
        "batch        up   infinite 1-infinite   no       NO        all      2   allocated             adev[8-9]\n"
        "batch        up   infinite 1-infinite   no       NO        all      6        idle             adev[10-15]\n"
        "debug*       up      30:00 1-infinite   no       NO        all      8        idle             adev[0-7]\n")


def test_list_reasons():
    parts, nodes = man_page_cluster()
    for i in (0, 5):
        nodes[i].update(state="drain", reason="Memory errors", reason_user="root", reason_time=NOW - 3600)
    nodes[9].update(state="down", flags=["NOT_RESPONDING"], reason="Not responding")
    assert format_partitions(parts, nodes, list_reasons=True) == (
        "REASON               USER      TIMESTAMP           NODELIST\n"
        "Not responding       Unknown   Unknown             adev9\n"
        "Memory errors        root      2024-03-01T11:00:00 adev[0,5]\n")
    assert format_partitions(parts, nodes, list_reasons=True, long=True, noheader=True) == (
        "Not responding       Unknown      Unknown             down*  adev9\n"
        "Memory errors        root         2024-03-01T11:00:00 drain  adev[0,5]\n")


def test_reason_longer_than_twenty_is_cut():
    parts, nodes = man_page_cluster()
    nodes[1].update(state="down", reason="GPU 3 fell off the bus (Xid 79)")
    assert format_partitions(parts, nodes, list_reasons=True, noheader=True) == \
        "GPU 3 fell off the b Unknown   Unknown             adev1\n"


def test_custom_format_cuts_default_partition_name_but_keeps_the_star():
    # no state field in the format: the two batch groups merge, as in sinfo
    parts, nodes = man_page_cluster()
    assert format_partitions(parts, nodes, fmt="%4P|%.3D|%c|%m|%N") == (
        "PART|NOD|CPUS|MEMORY|NODELIST\n"
        "batc|  8|2|3448|adev[8-15]\n"
        "deb*|  8|2|3448|adev[0-7]\n")


def test_empty_partition_and_down_partition():
    parts, nodes = man_page_cluster()
    parts.append({"name": "empty", "default": False, "state": "DOWN", "max_time": 600.0, "nodes": ""})
    out = format_partitions(parts, nodes, noheader=True).splitlines()
    assert out[-1] == "empty      down      10:00      0    n/a "


def test_from_a_real_cluster_state_via_views():
    state = ClusterState(simple_cluster(4, cpus=32, mem=256_000, gpus=8))
    state.nodes.allocate(99, Allocation(nodes=(0,), cpus=(32,), mem=(1000,), gpus=((0,),)))
    state.nodes.allocate(98, Allocation(nodes=(1,), cpus=(8,), mem=(1000,), gpus=((0,),)))
    state.nodes.set_drain(3, True, reason="bad gpu")
    parts = [partition_view(state, "gpu")]
    nodes = [node_view(state, i, ["gpu"]) for i in range(4)]
    assert format_partitions(parts, nodes) == (
        "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n"
        "gpu*         up   infinite      1  drain node04\n"
        "gpu*         up   infinite      1    mix node02\n"
        "gpu*         up   infinite      1  alloc node01\n"
        "gpu*         up   infinite      1   idle node03\n")
