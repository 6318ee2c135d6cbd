"""minislurm's own CSV trace format, its time strings, and the model of users' time limits."""

from __future__ import annotations

import io
import math

import pytest
from tracekit import DAY, HOUR, LESSON, MIN, by_id

from minislurm.sim.traces import (USER_LADDER, EstimateModel, parse_seconds, read_native, read_trace,
                                  round_up_like_users)


# --- native ---------------------------------------------------------------------------------

def test_lesson_trace():
    r = read_trace(LESSON, cores_per_node=32, gpus_per_node=8)
    assert r.fmt == "native" and r.skipped == 0 and r.notes == []
    assert len(r.jobs) == 12
    jobs = by_id(r.jobs)
    assert (jobs[1].runtime, jobs[1].time_limit) == (1.5 * HOUR, 2 * HOUR)
    assert (jobs[2].runtime, jobs[2].time_limit) == (20 * HOUR, DAY)  # the long job
    assert (jobs[5].nodes, jobs[5].gpus_per_node) == (2, 8)           # the 2-node job
    assert [j.job_id for j in r.jobs if j.nodes > 1] == [5]
    assert (jobs[6].runtime, jobs[6].time_limit) == (30 * MIN, HOUR)   # "30:00" and "60" (min)
    assert (jobs[7].runtime, jobs[7].time_limit) == (1200.0, 30 * MIN)  # "1200" is seconds
    assert (jobs[3].user, jobs[3].account, jobs[3].partition) == ("carol", "vision", None)
    assert {j.gpus_per_node for j in r.jobs} == {1, 2, 4, 8}
    # every small job's limit ends before job 1's limit (when job 5 is reserved): backfill fodder
    assert all(j.submit + j.time_limit <= jobs[1].time_limit for j in r.jobs
               if j.job_id in (6, 7, 9, 10, 12))


def test_native_time_strings_defaults_and_bad_rows():
    text = (
        "# a comment\n"                                                       # 1
        "\n"                                                                  # 2
        "id, submit, runtime, limit, nodes, gpus_per_node, user\n"            # 3
        "1,0,1-02:03:04,2-00:00:00,1,2,ann\n"                                 # 4
        "2,1:30,45,0:30,1,0,\n"                                               # 5 0:30 -> 1 min
        "3,100,7200,UNLIMITED,2,4,bob\n"                                      # 6
        "4,200,1000,,1,1,\n"                                                  # 7 estimate
        "5,300,100,abc,1,1,\n"                                                # 8 bad limit
        "1,400,100,10,1,1,\n"                                                 # 9 repeated id
        "6,500,100,10,1,9,\n"                                                 # 10 too many GPUs
        "7,600,100\n"                                                         # 11 short
        "8,700,100,10,1,1,x,extra\n"                                          # 12 long
        "9,800,0,10,1,1,\n"                                                   # 13 runtime 0
        "10,900,2:00:00,1:00:00,1,1,\n"                                       # 14 clamped
        "# trailing comment\n")
    r = read_native(io.StringIO(text), cores_per_node=16, gpus_per_node=4)
    jobs = by_id(r.jobs)
    assert sorted(jobs) == [1, 2, 3, 4, 10]
    assert (jobs[1].runtime, jobs[1].time_limit) == (DAY + 2 * HOUR + 3 * MIN + 4, 2 * DAY)
    assert (jobs[1].cpus_per_node, jobs[1].user) == (8, "ann")  # 2 of 4 GPUs -> half the cores
    assert (jobs[2].submit, jobs[2].runtime, jobs[2].time_limit) == (90.0, 45.0, 60.0)
    assert (jobs[2].cpus_per_node, jobs[2].user) == (1, "user")  # CPU-only default
    assert math.isinf(jobs[3].time_limit) and jobs[3].nodes == 2
    assert jobs[4].time_limit == HOUR  # estimate: 2 x 1000 s -> 1 h
    assert (jobs[10].runtime, jobs[10].time_limit) == (HOUR, HOUR)
    assert r.clamped == 1
    assert r.warnings == [
        "bad limit value: 1 line, first at line 8",
        "repeated id: 1 line, first at line 9",
        "job needs more than a node has (16 CPUs, 4 GPUs): 1 line, first at line 10",
        "wrong field count (expected 7): 2 lines, first at line 11",
        "runtime <= 0: 1 line, first at line 13",
    ]


def test_native_sorts_by_submit_then_id():
    text = "id,submit,runtime,limit,nodes,gpus_per_node\n5,10,1,1,1,0\n3,10,1,1,1,0\n9,0,1,1,1,0\n"
    r = read_native(io.StringIO(text), cores_per_node=1, gpus_per_node=0)
    assert [(j.job_id, j.submit) for j in r.jobs] == [(9, 0.0), (3, 10.0), (5, 10.0)]


def test_native_header_typo_is_an_error():
    with pytest.raises(ValueError, match="gpus_pernode"):
        read_native(io.StringIO("id,submit,runtime,limit,nodes,gpus_pernode\n"),
                    cores_per_node=1, gpus_per_node=0)


@pytest.mark.parametrize("text, seconds", [
    ("90", 90.0), ("12.5", 12.5), ("1:30", 90.0), ("1:00:00", 3600.0), ("2-00:00:00", 172800.0),
    ("1-12", 129600.0), ("1-12:30", 131400.0), ("0:00:01.5", 1.5),
])
def test_parse_seconds(text, seconds):
    assert parse_seconds(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "1:2:3:4", "1-2:3:4:5", "x-1", "1:", "nan", "inf"])
def test_parse_seconds_rejects(text):
    with pytest.raises(ValueError):
        parse_seconds(text)


# --- estimate model -------------------------------------------------------------------------

def test_user_ladder_values():
    assert USER_LADDER == (300, 600, 900, 1800, 3600, 7200, 14400, 28800, 43200,
                           86400, 172800, 259200, 604800, 1209600, 2592000)


@pytest.mark.parametrize("seconds, limit", [
    (0, 300), (1, 300), (300, 300), (301, 600), (899, 900), (1000, 1800), (3600, 3600),
    (3601, 7200), (5 * HOUR, 8 * HOUR), (12 * HOUR + 1, DAY), (2.5 * DAY, 3 * DAY),
    (4 * DAY, 7 * DAY), (8 * DAY, 14 * DAY), (20 * DAY, 30 * DAY), (30 * DAY + 1, 31 * DAY),
    (45.2 * DAY, 46 * DAY),
])
def test_round_up_like_users(seconds, limit):
    assert round_up_like_users(seconds) == limit


@pytest.mark.parametrize("runtime, limit", [
    (1, 300), (150, 300), (151, 600), (400, 900), (1000, HOUR), (HOUR, 2 * HOUR),
    (3 * HOUR, 8 * HOUR), (10 * HOUR, DAY), (36 * HOUR, 3 * DAY), (20 * DAY, 40 * DAY),
])
def test_estimate_model_default(runtime, limit):
    assert EstimateModel().limit_for(runtime) == limit


def test_estimate_model_options_and_validation():
    assert EstimateModel(factor=1.0).limit_for(HOUR) == HOUR
    assert EstimateModel(factor=3.0).limit_for(HOUR) == 4 * HOUR
    assert EstimateModel(floor=20 * MIN).limit_for(1) == 30 * MIN
    assert EstimateModel(factor=1.0, floor=0).limit_for(1) == 300  # the ladder starts at 5 min
    for bad in (dict(factor=0.5), dict(factor=math.inf), dict(floor=-1), dict(ladder=(600, 300))):
        with pytest.raises(ValueError):
            EstimateModel(**bad)
