"""The GPU cluster traces: Microsoft Philly (as shipped) and Alibaba's openb pods."""

from __future__ import annotations

import csv
import io

import pytest
from tracekit import DAY, MIN, OPENB, PHILLY, SHARED, by_id, needs_shared

from minislurm.sim.traces import read_openb, read_philly, read_trace


# --- Philly ---------------------------------------------------------------------------------

def test_philly_full_file_counts():
    # Reading time is part of the replay wall time bench/sim_replay.py measures; a timed assertion
    # here failed on a loaded machine (3.1 s against 2 s) without anything being wrong.
    with open(PHILLY, newline="") as fh:
        rows = [row for row in csv.reader(fh) if not row[0].startswith("#")]
    assert len(rows) == 111549
    r = read_philly(PHILLY, cores_per_node=32, gpus_per_node=8)
    assert len(r.jobs) == 111539
    assert r.skipped == 10
    assert r.warnings == ["duration <= 0: 10 lines, first at line 23208"]
    assert r.clamped == 0
    assert r.jobs[0].submit == 0.0 and r.jobs[-1].job_id == 111548
    assert max(j.nodes * j.gpus_per_node for j in r.jobs) == 128


def test_philly_node_mapping_on_known_rows():
    jobs = by_id(read_philly(PHILLY, cores_per_node=32, gpus_per_node=8).jobs)
    shape = {i: (jobs[i].nodes, jobs[i].gpus_per_node, jobs[i].cpus_per_node) for i in
             (0, 27507, 48749, 112, 59833, 12266)}
    assert shape == {
        0: (1, 1, 4),         # size 1
        27507: (1, 7, 28),    # size 7 fits one 8-GPU node
        48749: (1, 6, 24),    # size 6
        112: (2, 8, 32),      # size 16
        59833: (2, 8, 32),    # size 12: rounded up to two whole nodes
        12266: (16, 8, 32),   # size 128
    }
    assert 23206 not in jobs  # duration 0
    j = jobs[0]  # 3,613,033 s x 2 = 83.6 days -> 84 days
    assert (j.runtime, j.time_limit) == (3613033.0, 84 * DAY)
    j = jobs[112]
    assert (j.submit, j.runtime, j.time_limit) == (2601211.0, 1453510.0, 34 * DAY)
    assert jobs[59833].time_limit == 30 * MIN  # 556 s x 2 = 1112 s


def test_philly_on_four_gpu_nodes():
    jobs = by_id(read_philly(PHILLY, cores_per_node=16, gpus_per_node=4, limit=60000).jobs)
    assert (jobs[27507].nodes, jobs[27507].gpus_per_node, jobs[27507].cpus_per_node) == (2, 4, 16)
    assert (jobs[0].nodes, jobs[0].gpus_per_node, jobs[0].cpus_per_node) == (1, 1, 4)


def test_philly_limit():
    r = read_philly(PHILLY, cores_per_node=32, gpus_per_node=8, limit=100)
    assert [j.job_id for j in r.jobs] == list(range(100))


def test_philly_corrupt_lines():
    text = ("#job id,arrival time (sec),topology,shape,size,duration (sec)\n"   # 1
            "0,0.0,CLOS,1,1,100.0\n"                                             # 2
            "1,5.0,CLOS,1,1\n"                                                   # 3 short
            "2,6.0,CLOS,1,x,100\n"                                               # 4 non-numeric
            "3,7.0,CLOS,1,1,-100\n"                                              # 5 negative
            "4,8.0,CLOS,1,0,100\n"                                               # 6 size 0
            '5,9.0,CLOS,1,"1,100\n'                                              # 7 stray quote
            "6,10.0,CLOS,1,2.5,100\n"                                            # 8 fractional
            "7,-3,CLOS,1,1,100\n")                                               # 9 arrival < 0
    r = read_philly(io.StringIO(text), cores_per_node=8, gpus_per_node=4)
    assert [(j.job_id, j.gpus_per_node) for j in r.jobs] == [(0, 1), (6, 3)]
    assert r.skipped == 6
    assert r.warnings == [
        "wrong field count (expected 6): 1 line, first at line 3",
        "non-numeric field: 2 lines, first at line 4",
        "duration <= 0: 1 line, first at line 5",
        "size (GPUs) <= 0: 1 line, first at line 6",
        "negative arrival time: 1 line, first at line 9",
    ]
    assert r.notes == ["fractional GPU size rounded up to whole GPUs: 1 line, first at line 8"]


def test_philly_needs_gpus():
    with pytest.raises(ValueError):
        read_philly(PHILLY, cores_per_node=32, gpus_per_node=0)


# --- Alibaba openb --------------------------------------------------------------------------

@needs_shared
def test_openb_default_pods():
    r = read_openb(OPENB, cores_per_node=128, gpus_per_node=8)
    assert len(r.jobs) == 8151 and r.skipped == 1
    assert r.warnings == ["runtime <= 0: 1 line, first at line 7287"]
    assert r.notes == [
        "GPU-sharing pod (gpu_milli < 1000) given one whole GPU: 3077 lines, first at line 3",
        "never scheduled (Pending): runtime = deletion - creation: 896 lines, first at line 63",
    ]
    jobs = by_id(r.jobs)
    p1 = jobs[1]  # 6000 mCPU, 12288 MiB, 1 GPU at gpu_milli 460 -> one whole GPU
    assert (p1.nodes, p1.cpus_per_node, p1.gpus_per_node, p1.mem_per_node) == (1, 6, 1, 12288)
    assert (p1.submit, p1.runtime) == (427061.0, 12902960.0 - 427061.0)
    p17 = jobs[17]  # 8-GPU pod, 88 CPUs
    assert (p17.cpus_per_node, p17.gpus_per_node, p17.runtime) == (88, 8, 10769854.0 - 9437497.0)
    p5 = jobs[5]  # CPU-only pod, scheduled 2 s after creation
    assert (p5.gpus_per_node, p5.cpus_per_node, p5.runtime) == (0, 20, 12902960.0 - 2759676.0)
    p61 = jobs[61]  # Pending pod: deletion - creation
    assert (p61.runtime, p61.time_limit) == (125.0, 5 * MIN)
    assert all(j.nodes == 1 for j in r.jobs)


@needs_shared
def test_openb_pods_larger_than_a_node_are_skipped():
    r = read_openb(OPENB, cores_per_node=96, gpus_per_node=8)
    assert r.skipped == 1 + 5  # runtime 0; more than 96 CPUs
    assert "pod needs more CPUs than a node has (96): 5 lines, first at line 1641" in r.warnings
    r = read_openb(OPENB, cores_per_node=128, gpus_per_node=4)
    assert r.skipped == 1 + 44  # runtime 0; the 44 8-GPU pods
    assert "pod needs more GPUs than a node has (4): 44 lines, first at line 19" in r.warnings


@needs_shared
def test_openb_file_without_times_is_refused():
    with pytest.raises(ValueError, match="creation_time"):
        read_trace(SHARED / "alibaba-openb" / "openb_pod_list_multigpu50.csv",
                   cores_per_node=96, gpus_per_node=8)


def test_openb_corrupt_lines():
    header = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
              "creation_time,deletion_time,scheduled_time\n")
    text = header + (
        "openb-pod-0001,4000,1024,1,1000,,LS,Running,0,100,0\n"        # 2 ok
        "openb-pod-0002,4000,1024,1,1000,,LS,Running,0,100\n"          # 3 short
        "openb-pod-0003,four,1024,1,1000,,LS,Running,0,100,0\n"        # 4 non-numeric
        "openb-pod-0004,4000,1024,1,1000,,LS,Running,50,40,50\n"       # 5 negative runtime
        "openb-pod-0005,4000,1024,1,1000,,LS,Running,0,,0\n"           # 6 no deletion
        "openb-pod-0006,2500,2048,1,250,V100M16,BE,Running,10,70,20\n"  # 7 shared GPU
    )
    r = read_openb(io.StringIO(text), cores_per_node=8, gpus_per_node=2)
    assert [(j.job_id, j.cpus_per_node, j.gpus_per_node, j.runtime) for j in r.jobs] == [
        (1, 4, 1, 100.0), (6, 3, 1, 50.0)]
    assert r.warnings == [
        "wrong field count (expected 11): 1 line, first at line 3",
        "non-numeric field: 1 line, first at line 4",
        "runtime <= 0: 1 line, first at line 5",
        "no deletion time: 1 line, first at line 6",
    ]
