"""The Standard Workload Format reader (HPC2N, Alea, NASA) against the real traces."""

from __future__ import annotations

import io

from tracekit import DATA, HOUR, HPC2N, MIN, by_id

from minislurm.sim.traces import EstimateModel, read_machines, read_swf


# --- SWF: HPC2N -----------------------------------------------------------------------------

def test_hpc2n_counts_usable_jobs_and_cancelled_ones():
    data_lines = [ln for ln in HPC2N.read_text().splitlines()
                  if ln.strip() and not ln.startswith(";")]
    assert len(data_lines) == 3170
    r = read_swf(HPC2N, cores_per_node=2)
    assert r.fmt == "swf"
    assert len(r.jobs) == 3145  # 3,170 lines minus 25 jobs cancelled before start (runtime -1)
    assert r.skipped == 25
    assert r.warnings == ["runtime <= 0 (cancelled before start or unknown): 25 lines, "
                          "first at line 34"]
    assert r.clamped == 320
    assert r.notes == ["runtime above time limit, clamped to the limit: 320 lines, "
                       "first at line 29"]
    assert all(j.runtime > 0 and j.runtime <= j.time_limit for j in r.jobs)
    assert all(j.gpus_per_node == 0 and j.mem_per_node == 0 for j in r.jobs)
    assert [(j.submit, j.job_id) for j in r.jobs] == sorted((j.submit, j.job_id) for j in r.jobs)


def test_hpc2n_node_mapping_on_known_rows():
    jobs = by_id(read_swf(HPC2N, cores_per_node=2).jobs)
    j1 = jobs[1]  # "1 0 308434 31405 30 31405 -1 30 37980 ... 1 1 ..."
    assert (j1.submit, j1.runtime, j1.time_limit) == (0.0, 31405.0, 37980.0)
    assert (j1.nodes, j1.cpus_per_node, j1.user, j1.account) == (15, 2, "u1", "g1")
    j4 = jobs[4]  # 2 procs, 143967 s of 144000 s requested
    assert (j4.nodes, j4.cpus_per_node, j4.runtime, j4.time_limit) == (1, 2, 143967.0, 144000.0)
    j12 = jobs[12]  # 40 procs, 553 s
    assert (j12.nodes, j12.cpus_per_node, j12.runtime, j12.time_limit) == (20, 2, 553.0, 43200.0)
    j15 = jobs[15]  # ran 86462 s on a 86400 s request: clamped, as Slurm would kill it
    assert (j15.runtime, j15.time_limit) == (86400.0, 86400.0)
    assert 16 not in jobs  # runtime -1: cancelled before it started
    # the machine has 120 dual-CPU nodes; no job asks for more
    assert max(j.nodes for j in jobs.values()) <= 120


def test_swf_processor_mapping_on_wider_nodes():
    jobs = by_id(read_swf(HPC2N, cores_per_node=4).jobs)
    # 30 procs -> ceil(30/4) = 8 nodes, ceil(30/8) = 4 CPUs each
    assert (jobs[1].nodes, jobs[1].cpus_per_node) == (8, 4)
    assert (jobs[4].nodes, jobs[4].cpus_per_node) == (1, 2)


def test_read_machines():
    assert read_machines(str(HPC2N) + ".machines") == [("seth", 120, 2)]


def test_swf_requested_procs_used_when_allocated_unknown():
    text = "; header\n" \
           "1 0 0 100 -1 -1 -1 6 200 -1 1 3 4 -1 -1 1 -1 -1\n" \
           "2 5 0 100 -1 -1 -1 -1 200 -1 5 3 4 -1 -1 1 -1 -1\n"
    r = read_swf(io.StringIO(text), cores_per_node=4)
    assert [(j.job_id, j.nodes, j.cpus_per_node) for j in r.jobs] == [(1, 2, 3)]
    assert r.warnings == ["processor count <= 0 (cancelled before start or unknown): 1 line, "
                          "first at line 3"]


def test_swf_corrupt_lines_are_counted_not_raised(tmp_path):
    good = "{id} {t} 0 100 4 -1 -1 4 3600 -1 1 1 1 -1 -1 1 -1 -1\n"
    text = "".join([
        "; Version: 2.2\n",                                           # 1
        good.format(id=1, t=0),                                       # 2
        "2 10 0 100 4 -1 -1 4\n",                                     # 3 too few fields
        "3 20 0 abc 4 -1 -1 4 3600 -1 1 1 1 -1 -1 1 -1 -1\n",         # 4 non-numeric
        "4 30 0 -5 4 -1 -1 4 3600 -1 1 1 1 -1 -1 1 -1 -1\n",         # 5 negative runtime
        "\n",                                                         # 6 blank
        good.format(id=6, t=50),                                      # 7
        "7 60 0 nan 4 -1 -1 4 3600 -1 1 1 1 -1 -1 1 -1 -1\n",         # 8 NaN
        "8 70 0 100 4 -1 -1 4 3600 -1 1 1 1 -1 -1 1\n",               # 9 too few fields
        "9 -1 0 100 4 -1 -1 4 3600 -1 1 1 1 -1 -1 1 -1 -1\n",         # 10 unknown submit
        "10 80 0 0 4 -1 -1 4 3600 -1 1 1 1 -1 -1 1 -1 -1\n",          # 11 zero runtime
        "11 90 0 100 4 -1 -1 4 1e999 -1 1 1 1 -1 -1 1 -1 -1\n",       # 12 overflow
        "12 95 0 100 4 -1 -1 4 3600 -1 1 1 99999999999999999999999e999 -1 -1 1 -1 -1\n",  # 13
        good.format(id=13, t=100),                                    # 14
    ])
    path = tmp_path / "broken.swf"
    path.write_text(text)
    r = read_swf(path, cores_per_node=4)
    assert [j.job_id for j in r.jobs] == [1, 6, 13]
    assert r.skipped == 9
    assert r.warnings == [
        "wrong field count (expected 18): 2 lines, first at line 3",
        "non-numeric field: 4 lines, first at line 4",
        "runtime <= 0 (cancelled before start or unknown): 2 lines, first at line 5",
        "unknown submit time: 1 line, first at line 10",
    ]


def test_swf_missing_requested_time_uses_estimate():
    text = "1 0 -1 1000 1 -1 -1 1 -1 -1 1 -1 -1 -1 0 -1 -1 -1\n"
    (job,) = read_swf(io.StringIO(text), cores_per_node=1).jobs
    assert job.time_limit == HOUR  # 2 x 1000 s -> next ladder value, 1 h
    assert (job.user, job.account) == ("user", "default")
    (job,) = read_swf(io.StringIO(text), cores_per_node=1,
                      estimate=EstimateModel(factor=1.0)).jobs
    assert job.time_limit == 30 * MIN


def test_swf_limit_stops_early():
    r = read_swf(HPC2N, cores_per_node=2, limit=10)
    assert [j.job_id for j in r.jobs] == [1, 2, 3, 4, 10, 11, 12, 13, 14, 15]


def test_alea_extended_swf_and_unix_submit_times():
    r = read_swf(DATA / "alea_wagap-2013.swf", cores_per_node=80)
    assert (len(r.jobs), r.skipped, r.clamped) == (17898, 2, 702)
    assert r.jobs[0].submit == 0.0  # Unix times shifted to the first submit
    assert r.jobs[-1].submit == 1364682183.0 - 1356996147.0
