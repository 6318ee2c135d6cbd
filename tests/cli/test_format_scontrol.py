"""scontrol show job/node/partition/hostnames/hostlist (see minislurm/cli/fmt/scontrol.py and
scontrol_nodes.py)."""

from minislurm.cli.fmt.scontrol import show_job
from minislurm.cli.fmt.scontrol_nodes import show_hostlist, show_hostnames, show_node, show_partition
from minislurm.core.cluster import simple_cluster
from minislurm.core.job import Allocation, Job, Shape
from minislurm.core.state import ClusterState
from minislurm.core.views import job_view, node_view, partition_view

NOW = 1_709_294_400.0  # 2024-03-01T12:00:00 UTC


def running_job(**kw):
    j = {"job_id": 1042, "array_job_id": None, "array_task_id": None, "display_id": "1042",
         "name": "llama-pretrain", "user": "alice", "uid": 1000, "gid": 1000, "account": "research",
         "partition": "gpu", "state": "RUNNING", "reason": "None", "priority": 4294901757, "nice": 0,
         "submit_time": NOW - 4000, "eligible_time": NOW - 4000, "start_time": NOW - 3723, "end_time": None,
         "time_limit": 86400.0, "num_nodes": 2, "num_cpus": 128, "num_tasks": 16, "cpus_per_task": 8,
         "mem_per_node": 512000, "gres": "gpu:8", "nodes": "gpu[01-02]", "exit_code": "0:0",
         "restart_count": 0, "requeue": True, "exclusive": False, "hold": None, "dependency": None,
         "reservation": None, "req_nodes": "", "exc_nodes": "", "batch_host": "gpu01",
         "work_dir": "/home/alice", "stdout": "%x-%j.out", "stderr": "", "command": "/home/alice/train.sh",
         "submit_host": "login1", "alloc_sid": 4242, "ntasks_per_node": 8}
    j.update(kw)
    return j


def test_show_running_job():
    assert show_job(running_job(), now=NOW) == (
        "JobId=1042 JobName=llama-pretrain\n"
        "   UserId=alice(1000) GroupId=alice(1000) MCS_label=N/A\n"
        "   Priority=4294901757 Nice=0 Account=research QOS=normal\n"
        "   JobState=RUNNING Reason=None Dependency=(null)\n"
        "   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0\n"
        "   RunTime=01:02:03 TimeLimit=1-00:00:00 TimeMin=N/A\n"
        "   SubmitTime=2024-03-01T10:53:20 EligibleTime=2024-03-01T10:53:20\n"
        "   AccrueTime=2024-03-01T10:53:20\n"
        "   StartTime=2024-03-01T10:57:57 EndTime=2024-03-02T10:57:57 Deadline=N/A\n"
        "   SuspendTime=None SecsPreSuspend=0 LastSchedEval=2024-03-01T10:57:57 Scheduler=Main\n"
        "   Partition=gpu AllocNode:Sid=login1:4242\n"
        "   ReqNodeList=(null) ExcNodeList=(null)\n"
        "   NodeList=gpu[01-02]\n"
        "   BatchHost=gpu01\n"
        "   NumNodes=2 NumCPUs=128 NumTasks=16 CPUs/Task=8 ReqB:S:C:T=0:0:*:*\n"
        "   TRES=cpu=128,mem=1000G,node=2,billing=128,gres/gpu=16\n"
        "   Socks/Node=* NtasksPerN:B:S:C=8:0:*:* CoreSpec=*\n"
        "   MinCPUsNode=64 MinMemoryNode=500G MinTmpDiskNode=0\n"
        "   Features=(null) DelayBoot=00:00:00\n"
        "   OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null)\n"
        "   Command=/home/alice/train.sh\n"
        "   WorkDir=/home/alice\n"
        "   StdErr=/home/alice/llama-pretrain-1042.out\n"
        "   StdIn=/dev/null\n"
        "   StdOut=/home/alice/llama-pretrain-1042.out\n"
        "   Power=\n"
        "   TresPerNode=gres:gpu:8\n"
        "   \n"
        "\n")


def test_show_pending_held_array_task():
    j = running_job(job_id=1085, array_job_id=1080, array_task_id=5, display_id="1080_5", state="PENDING",
                    reason="launch failed requeued held", start_time=None, nodes="", batch_host=None,
                    hold="admin", restart_count=2, gres="", stdout="", exclusive=True, time_limit=None,
                    dependency="afterok:1079", array_max_tasks=4, num_tasks=None, ntasks_per_node=0,
                    mem_per_node=0, max_nodes=2)
    out = show_job(j, now=NOW).splitlines()
    assert out[0] == "JobId=1085 ArrayJobId=1080 ArrayTaskId=5 ArrayTaskThrottle=4 JobName=llama-pretrain"
    assert out[3] == "   JobState=PENDING Reason=launch_failed_requeued_held Dependency=afterok:1079"
    assert out[4] == "   Requeue=1 Restarts=2 BatchFlag=1 Reboot=0 ExitCode=0:0"
    assert out[5] == "   RunTime=00:00:00 TimeLimit=UNLIMITED TimeMin=N/A"
    assert out[6] == "   SubmitTime=2024-03-01T10:53:20 EligibleTime=Unknown"
    assert out[8] == "   StartTime=Unknown EndTime=Unknown Deadline=N/A"
    assert out[12] == "   NodeList=(null)"
    assert out[13] == "   NumNodes=2-2 NumCPUs=128 NumTasks=N/A CPUs/Task=8 ReqB:S:C:T=0:0:*:*"
    assert out[14] == "   TRES=cpu=128,node=2,billing=128"
    assert out[16] == "   MinCPUsNode=8 MinMemoryNode=0 MinTmpDiskNode=0"  # -c 8, no --ntasks-per-node
    assert out[18] == "   OverSubscribe=NO Contiguous=0 Licenses=(null) Network=(null)"
    assert out[21:25] == ["   StdErr=/home/alice/slurm-1080_5.out", "   StdIn=/dev/null",
                          "   StdOut=/home/alice/slurm-1080_5.out", "   Power="]


def test_show_job_from_a_real_cluster_state():
    state = ClusterState(simple_cluster(2, cpus=32, mem=256_000, gpus=8))
    job = state.add(Job(3, user="carol", account="ml", partition="gpu", name="train", submit_time=NOW - 90,
                        time_limit=1800.0, num_nodes=1, shape=Shape(cpus=16, mem=64_000, gpus=4)))
    state.start(job, Allocation(nodes=(1,), cpus=(16,), mem=(64_000,), gpus=((0, 1, 2, 3),)), NOW - 30)
    out = show_job(job_view(job, state, {"uid": 1001, "work_dir": "/w"}), now=NOW).splitlines()
    assert out[5] == "   RunTime=00:00:30 TimeLimit=00:30:00 TimeMin=N/A"
    assert out[12:14] == ["   NodeList=node02", "   BatchHost=node02"]
    assert out[15] == "   TRES=cpu=16,mem=64000M,node=1,billing=16,gres/gpu=4"
    assert out[-3:] == ["   TresPerNode=gres:gpu:4", "   ", ""]


def test_show_node():
    node = {"name": "gpu01", "state": "mix", "flags": [], "reason": None, "cpus": 64, "alloc_cpus": 16,
            "real_memory": 512000, "alloc_mem": 65536, "gpus": 8, "alloc_gpus": [0, 1, 2, 3],
            "gres": "gpu:8", "partitions": ["gpu", "all"], "addr": None, "jobs": [1042],
            "os": "Linux 6.1.0-18-amd64 #1 SMP Debian 6.1.76-1", "cpu_load": 3.456, "free_mem": 401234}
    assert show_node(node) == (  # as the twin's 22.05.8 prints a node (tests/live/sessions/divergences.out)
        "NodeName=gpu01 Arch=x86_64 CoresPerSocket=1 \n"
        "   CPUAlloc=16 CPUEfctv=64 CPUTot=64 CPULoad=3.46\n"
        "   AvailableFeatures=(null)\n"
        "   ActiveFeatures=(null)\n"
        "   Gres=gpu:8\n"
        "   NodeAddr=gpu01 NodeHostName=gpu01 Version=22.05.8\n"
        "   OS=Linux 6.1.0-18-amd64 #1 SMP Debian 6.1.76-1 \n"
        "   RealMemory=512000 AllocMem=65536 FreeMem=401234 Sockets=64 Boards=1\n"
        "   State=MIXED ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A\n"
        "   Partitions=gpu,all \n"
        "   BootTime=None SlurmdStartTime=None\n"
        "   LastBusyTime=Unknown\n"
        "   CfgTRES=cpu=64,mem=500G,billing=64,gres/gpu=8\n"
        "   AllocTRES=cpu=16,mem=64G,gres/gpu=4\n"
        "   CapWatts=n/a\n"
        "   CurrentWatts=0 AveWatts=0\n"
        "   ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s\n"
        "\n")


def test_a_node_that_has_not_reported_its_load_shows_n_a():
    out = show_node({"name": "c1", "state": "idle", "cpus": 8}).splitlines()
    assert out[1].endswith(" CPULoad=N/A") and " FreeMem=N/A " in out[7]


def test_show_down_drained_node_states_and_reason():
    node = {"name": "gpu02", "state": "down", "flags": ["NOT_RESPONDING", "DRAIN"], "reason": "Not responding",
            "reason_user": "slurm", "reason_time": NOW - 300, "cpus": 64, "alloc_cpus": 0, "real_memory": 1000,
            "alloc_mem": 0, "gpus": 0, "alloc_gpus": [], "gres": "", "partitions": ["gpu"]}
    out = show_node(node).splitlines()
    assert out[4] == "   Gres=(null)"
    assert out[8] == "   State=DOWN+DRAIN+NOT_RESPONDING ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A"
    assert out[12:14] == ["   CfgTRES=cpu=64,mem=1000M,billing=64", "   AllocTRES="]
    assert out[-2:] == ["   Reason=Not responding [slurm@2024-03-01T11:55:00]", ""]
    assert show_node(dict(node, state="drng", flags=[], alloc_cpus=64)).splitlines()[8].startswith(
        "   State=ALLOCATED+DRAIN ")
    assert show_node(dict(node, state="drain", flags=[])).splitlines()[8].startswith("   State=IDLE+DRAIN ")


def test_show_partition_from_a_real_cluster_state():
    state = ClusterState(simple_cluster(4, cpus=64, mem=512_000, gpus=8))
    nodes = [node_view(state, i, ["gpu"]) for i in range(4)]
    assert show_partition(partition_view(state, "gpu"), nodes) == (
        "PartitionName=gpu\n"
        "   AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL\n"
        "   AllocNodes=ALL Default=YES QoS=N/A\n"
        "   DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO ExclusiveTopo=NO GraceTime=0 Hidden=NO\n"
        "   MaxNodes=UNLIMITED MaxTime=UNLIMITED MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED "
        "MaxCPUsPerSocket=UNLIMITED\n"
        "   Nodes=node[01-04]\n"
        "   PriorityJobFactor=1 PriorityTier=1 RootOnly=NO ReqResv=NO OverSubscribe=NO\n"
        "   OverTimeLimit=NONE PreemptMode=OFF\n"
        "   State=UP TotalCPUs=256 TotalNodes=4 SelectTypeParameters=NONE\n"
        "   JobDefaults=(null)\n"
        "   DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED\n"
        "   TRES=cpu=256,mem=2000G,node=4,billing=256,gres/gpu=32\n"
        "\n")


def test_partition_limits():
    part = {"name": "debug", "default": False, "state": "DOWN", "max_time": 1800.0, "default_time": 600.0,
            "max_nodes": 2, "nodes": "cpu[1-2]", "total_nodes": 2, "total_cpus": 8, "total_gpus": 0,
            "priority_tier": 10, "priority_job_factor": 5}
    out = show_partition(part).splitlines()
    assert out[2] == "   AllocNodes=ALL Default=NO QoS=N/A"
    assert out[3].startswith("   DefaultTime=00:10:00 ")
    assert out[4].startswith("   MaxNodes=2 MaxTime=00:30:00 MinNodes=0 ")
    assert out[6].startswith("   PriorityJobFactor=5 PriorityTier=10 ")
    assert out[8] == "   State=DOWN TotalCPUs=8 TotalNodes=2 SelectTypeParameters=NONE"
    assert out[11] == "   TRES=cpu=8,node=2,billing=8"


def test_hostnames_and_hostlist():
    assert show_hostnames("tux[1-3]") == "tux1\ntux2\ntux3\n"
    assert show_hostnames("gpu[01-02],login1") == "gpu01\ngpu02\nlogin1\n"
    assert show_hostlist("tux2,tux1,tux2") == "tux[2,1-2]\n"
    assert show_hostlist("tux2,tux1,tux2,tux3", sorted=True) == "tux[1-3]\n"
    assert show_hostlist("node01,node02,node03,node05") == "node[01-03,05]\n"


def test_control_characters_print_escaped():
    """A newline in a job name no longer forges a ``Key=Value`` line (Slurm prints it raw)."""
    text = show_job(running_job(name="a\nb", work_dir="/home/alice/\x1b[2J"), now=NOW)
    assert text.splitlines()[0] == "JobId=1042 JobName=a\\nb"
    assert "   WorkDir=/home/alice/\\x1b[2J" in text.splitlines()
    assert "\x1b" not in text and text.count("\n") == show_job(running_job(), now=NOW).count("\n")


def test_show_job_details_as_slurm_22_05_prints_them():
    """``scontrol show job -d`` on the twin: DerivedExitCode after ExitCode, then after the
    Socks/Node line ``JOB_GRES`` and one line per group of nodes with the same allocation."""
    job = running_job(gres="gpu:2", alloc_detail=[["gpu01", 0, 2, 2000, [0, 1]], ["gpu02", 0, 2, 2000, [0, 1]]])
    out = show_job(job, now=NOW, details=True).splitlines()
    assert out[out.index("   DerivedExitCode=0:0") - 1].endswith("ExitCode=0:0")
    at = next(i for i, line in enumerate(out) if line.startswith("   Socks/Node="))
    assert out[at + 1:at + 3] == ["   JOB_GRES=gpu:4", "     Nodes=gpu[01-02] CPU_IDs=0-1 Mem=2000 GRES=gpu:2(IDX:0-1)"]
    job = running_job(gres="", alloc_detail=[["gpu01", 3, 1, 1000, []]])
    out = show_job(job, now=NOW, details=True).splitlines()
    assert "   JOB_GRES=(null)" in out and "     Nodes=gpu01 CPU_IDs=3 Mem=1000 GRES=" in out
    assert "DerivedExitCode" not in show_job(job, now=NOW)
