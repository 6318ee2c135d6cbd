"""``minislurm sim`` and ``minislurm demo`` end to end: outputs, exact results, and bad input."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from minislurm.cli.main import main
from minislurm.sim.metrics import CSV_COLUMNS
from minislurm.sim.traces import read_trace

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data" / "traces"
HPC2N, PHILLY, LESSON = DATA / "alea_hpc2n.swf", DATA / "rfold_philly_trace.csv", DATA / "lesson_small.csv"
LAB_CONF = ROOT / "data" / "conf" / "lab" / "slurm.conf"
KEYS = {"jobs", "policy", "utilization", "wait_mean_s", "wait_median_s", "wait_p95_s", "bsld_mean",
        "makespan_s", "wall_s", "jobs_per_s"}
PNG = b"\x89PNG\r\n\x1a\n"


def sim(capsys, *args) -> tuple[int, str, str]:
    rc = main(["sim", *map(str, args)])
    out, err = capsys.readouterr()
    return rc, out, err


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames) == CSV_COLUMNS
        return list(reader)


def test_sim_writes_csv_summary_and_charts(tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    rc, stdout, err = sim(capsys, "--trace", HPC2N, "--nodes", 120, "--cpus-per-node", 2,
                          "--gpus-per-node", 0, "--limit-jobs", 300, "--policy", "easy", "--out", out)
    assert rc == 0
    summary = json.loads((out / "summary.json").read_text())
    assert json.loads(stdout) == summary
    assert KEYS <= set(summary)
    assert (summary["policy"], summary["jobs"], summary["nodes"]) == ("easy", 300, 120)
    assert summary["rejected"] == 0
    assert summary["wall_s"] > 0 and summary["jobs_per_s"] == pytest.approx(300 / summary["wall_s"])
    assert 0 < summary["utilization"] <= 1 and summary["makespan_s"] > 0
    table = rows(out / "jobs.csv")
    assert len(table) == 300 and len({r["id"] for r in table}) == 300
    assert all(r["state"] == "COMPLETED" and float(r["start"]) >= float(r["submit"]) for r in table)
    waits = sorted(float(r["wait"]) for r in table)
    assert summary["wait_mean_s"] == pytest.approx(sum(waits) / 300)
    assert summary["wait_median_s"] == pytest.approx((waits[149] + waits[150]) / 2)
    for chart in ("gantt.png", "utilization.png"):
        assert (out / chart).read_bytes()[:8] == PNG
    # HPC2N's first 300 jobs sit among lines with runtime -1: skipped, counted and warned.
    read = read_trace(HPC2N, cores_per_node=2, limit=300)
    assert read.skipped > 0 and summary["skipped_lines"] == read.skipped
    assert err.splitlines() == [f"minislurm sim: warning: {w}" for w in read.warnings]


def test_lesson_trace_exact(tmp_path: Path, capsys) -> None:
    """The story told in lesson_small.csv's header, to the second."""
    got = {}
    for policy in ("conservative", "fifo"):
        rc, _, _ = sim(capsys, "--trace", LESSON, "--nodes", 4, "--policy", policy, "--no-charts",
                       "--out", tmp_path / policy)
        assert rc == 0
        table = rows(tmp_path / policy / "jobs.csv")
        got[policy] = {int(r["id"]): (float(r["start"]), r["backfilled"]) for r in table}
    cons, fifo = got["conservative"], got["fifo"]
    assert cons[5] == (5400.0, "0")  # job 1 really ends at 1:30:00, half an hour before the promise
    assert cons[11] == (2730.0, "1")  # waits until job 3 leaves node3 at 0:45:30
    assert cons[8] == (10860.0, "0")  # needs a whole node: waits longest
    submits = {6: 180.0, 7: 240.0, 9: 360.0, 10: 600.0, 12: 1200.0}
    assert {j: cons[j] for j in submits} == {j: (t, "1") for j, t in submits.items()}  # at once
    assert all(fifo[j][0] >= fifo[5][0] == 5400.0 and fifo[j][1] == "0" for j in range(6, 13))


def test_sim_as_a_subprocess(tmp_path: Path) -> None:
    out = tmp_path / "sub"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "minislurm.cli.main", "sim", "--trace", str(LESSON),
                           "--nodes", "4", "--no-charts", "--out", str(out)],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    summary = json.loads(proc.stdout)
    assert summary == json.loads((out / "summary.json").read_text())
    assert (summary["jobs"], summary["completed"], summary["policy"]) == (12, 12, "conservative")
    assert len(rows(out / "jobs.csv")) == 12 and not (out / "gantt.png").exists()


def test_corrupt_lines_and_too_large_jobs_are_counted(tmp_path: Path, capsys) -> None:
    ok = "{id} {sub} -1 100 {procs} -1 -1 {procs} 600 -1 1 1 1 -1 -1 1 -1 -1"
    trace = tmp_path / "mixed.swf"
    trace.write_text("\n".join([
        "; a small SWF log", ok.format(id=1, sub=0, procs=2), "2 5 -1 100",  # too few fields
        ok.format(id=3, sub=10, procs=100),  # 50 nodes on a 2-node cluster
        ok.format(id=4, sub=20, procs=4).replace(" 100 ", " abc ", 1),  # non-numeric
        ok.format(id=5, sub=30, procs=3), ""]))
    out = tmp_path / "run"
    rc, stdout, err = sim(capsys, "--trace", trace, "--nodes", 2, "--cpus-per-node", 2, "--gpus-per-node", 0,
                          "--no-charts", "--out", out)
    assert rc == 0
    summary = json.loads(stdout)
    assert (summary["jobs"], summary["skipped_lines"], summary["rejected"]) == (2, 2, 1)
    assert err.splitlines() == [
        "minislurm sim: warning: wrong field count (expected 18): 1 line, first at line 3",
        "minislurm sim: warning: non-numeric field: 1 line, first at line 5",
        "minislurm sim: warning: 1 job rejected at submission: Requested node configuration is not "
        "available (first: trace job 3)"]
    table = rows(out / "jobs.csv")
    assert [(r["submit"], r["start"], r["end"], r["nodes"]) for r in table] == [
        ("0", "0", "100.0", "1"), ("30.0", "100.0", "200.0", "2")]  # job 5 needs both nodes


def test_config_file(tmp_path: Path, capsys) -> None:
    """The lab's slurm.conf: 4 nodes x 32 CPUs x 8 GPUs; MaxTime=1-0 refuses longer limits."""
    out = tmp_path / "lab"
    rc, stdout, err = sim(capsys, "--trace", PHILLY, "--config", LAB_CONF, "--limit-jobs", 1000,
                          "--no-charts", "--out", out)
    assert rc == 0
    summary = json.loads(stdout)
    too_long = sum(j.time_limit > 86400 for j in read_trace(PHILLY, cores_per_node=32, gpus_per_node=8,
                                                            limit=1000).jobs)
    assert 0 < too_long < 1000
    assert (summary["nodes"], summary["cpus_per_node"], summary["gpus_per_node"]) == (4, 32, 8)
    assert (summary["rejected"], summary["jobs"]) == (too_long, 1000 - too_long)
    assert summary["completed"] == summary["jobs"] and len(rows(out / "jobs.csv")) == summary["jobs"]
    assert (f"minislurm sim: warning: {too_long} jobs rejected at submission: Requested time limit is "
            "invalid (missing or exceeds some limit) (first: trace job 0)") in err.splitlines()


def test_config_policy_is_kept_unless_overridden(tmp_path: Path, capsys) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text("SchedulerType=sched/builtin\nSchedulerParameters=bf_max_job_test=7\n"
                    "NodeName=n[1-4] CPUs=8 RealMemory=1000 State=IDLE\n"
                    "PartitionName=p Nodes=n[1-4] Default=YES MaxTime=UNLIMITED State=UP\n")
    got = []
    for extra in ([], ["--policy", "easy", "--bf-max-job-test", "9"]):
        rc, stdout, _ = sim(capsys, "--trace", HPC2N, "--config", conf, "--limit-jobs", 200, "--no-charts",
                            "--out", tmp_path / str(len(extra)), *extra)
        assert rc == 0
        s = json.loads(stdout)
        got.append((s["policy"], s["bf_max_job_test"], s["nodes"], s["backfilled"] > 0))
    assert got == [("fifo", 7, 4, False), ("easy", 9, 4, True)]


def test_failure_model_options_reach_the_replay(tmp_path: Path, capsys) -> None:
    """Lemons fail more often, and checkpoints that take time to write make every job longer:
    the same trace, seed and MTBF with and without them."""
    def run(*extra) -> dict:
        rc, stdout, _ = sim(capsys, "--trace", PHILLY, "--limit-jobs", 100, "--nodes", 16, "--mtbf-hours", 200,
                            "--checkpoint-interval", 1800, "--no-charts", "--out", tmp_path / str(len(extra)), *extra)
        assert rc == 0
        return json.loads(stdout)

    plain, lemons = run(), run("--lemon-fraction", 0.25, "--lemon-factor", 20)
    costly = run("--checkpoint-cost", 600)
    assert lemons["node_failures"] > 2 * plain["node_failures"]
    assert costly["jct_mean_s"] > plain["jct_mean_s"]


BAD = {
    "missing trace": (["--trace", "{tmp}/nope.swf"], "No such file or directory"),
    "undetectable format": (["--trace", "{tmp}/notes.txt"], "cannot tell the trace format"),
    "nodes 0": (["--trace", str(HPC2N), "--nodes", "0"], "--nodes must be at least 1"),
    "bf-interval 0": (["--trace", str(HPC2N), "--bf-interval", "0"], "--bf-interval must be a positive"),
    "mtbf negative": (["--trace", str(HPC2N), "--mtbf-hours", "-5"], "--mtbf-hours must be a positive"),
    "lemons over 1": (["--trace", str(HPC2N), "--lemon-fraction", "1.5"], "--lemon-fraction must be between 0"),
    "shape 0": (["--trace", str(HPC2N), "--failure-shape", "0"], "--failure-shape must be a positive"),
    "cost negative": (["--trace", str(HPC2N), "--checkpoint-cost", "-1"], "--checkpoint-cost must not be"),
    "all lines corrupt": (["--trace", "{tmp}/junk.swf"], "no jobs to replay in {tmp}/junk.swf (3 unusable"),
    "bad config": (["--trace", str(HPC2N), "--config", "{tmp}/slurm.conf"], "slurm.conf line 1"),
    "gpu trace without gpus": (["--trace", str(PHILLY), "--gpus-per-node", "0"], "gpus_per_node must be"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_a_clear_error(case: str, tmp_path: Path, capsys) -> None:
    (tmp_path / "notes.txt").write_text("hello\nworld\n")
    (tmp_path / "junk.swf").write_text("; header\nnot a job\n1 2 3\nx y z " + "0 " * 16 + "\n")
    (tmp_path / "slurm.conf").write_text("NodeName=\n")
    args, message = BAD[case]
    out = tmp_path / "out"
    rc, stdout, err = sim(capsys, *[a.format(tmp=tmp_path) for a in args], "--out", out)
    assert rc == 1 and stdout == ""
    assert err.startswith("minislurm sim: error: ") and err.count("\n") == 1
    assert message.format(tmp=tmp_path) in err
    assert not out.exists()  # nothing half-written


def test_argparse_errors_use_the_same_form(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["sim", "--trace", str(HPC2N), "--format", "bogus", "--out", str(tmp_path / "o")])
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("minislurm sim: error: argument --format: invalid choice: 'bogus'")
    assert not (tmp_path / "o").exists()
    assert main(["nosuch"]) == 1
    assert "minislurm: error: unknown command 'nosuch'" in capsys.readouterr().err


DEMO_RUNS = {"hpc2n-fifo": "HPC2N 120x2 CPUs, fifo", "hpc2n-easy": "HPC2N 120x2 CPUs, easy",
             "hpc2n-conservative": "HPC2N 120x2 CPUs, conservative",
             "philly-clean": "Philly 320x8 GPUs, no failures",
             "philly-failures": "Philly 320x8 GPUs, MTBF 2000 h"}


def check_demo_table(out: str, folder: Path) -> None:
    lines = out.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("replay "))
    assert lines[at].split() == ["replay", "jobs", "util", "wait", "min", "p95", "min", "bsld",
                                 "backfld", "wall", "s"]
    assert set(lines[at + 1]) == {"-"} and len(lines[at + 1]) == len(lines[at])
    for i, (name, label) in enumerate(DEMO_RUNS.items()):
        summary = json.loads((folder / name / "summary.json").read_text())
        line = next(x for x in lines[at + 2:] if x.startswith(label))
        cells = line[len(label):].split()
        assert int(cells[0]) == summary["jobs"] and int(cells[5]) == summary["backfilled"]
        assert float(cells[1].rstrip("%")) == round(100 * summary["utilization"], 1)
        assert len(rows(folder / name / "jobs.csv")) == summary["jobs"]
        for chart in ("gantt.png", "utilization.png"):
            assert (folder / name / chart).read_bytes()[:8] == PNG
    failures = json.loads((folder / "philly-failures" / "summary.json").read_text())
    assert failures["node_failures"] > 0
    assert f"node failures {failures['node_failures']}, requeues {failures['requeues']}," in out
    # The legend after the table: every column explained, and why Philly's waits are 0.
    legend = {c: next((x for x in lines if x.startswith(c + " ")), "")
              for c in ("util", "wait min", "bsld", "backfld", "wall s")}
    assert all(legend.values()), legend
    clean = json.loads((folder / "philly-clean" / "summary.json").read_text())
    assert f"max(run, {clean['bsld_tau_s']:.0f} s)" in legend["bsld"]
    assert clean["wait_p95_s"] == 0 and clean["utilization"] < 0.5  # the demo's Philly run is under-full
    why = next(i for i, x in enumerate(lines) if x.startswith("Philly waits "))
    sentence = " ".join(lines[why:why + 2])
    gpus = clean["nodes"] * clean["gpus_per_node"]
    assert (f"Philly waits {clean['wait_mean_s'] / 60:.1f} min: its {gpus:,} GPUs are "
            f"{clean['utilization']:.1%} busy") in sentence
    assert f"(mean wait {clean['wait_mean_s']:.1f} s)" in sentence


@pytest.mark.slow  # ~25 s: the five replays alone, with no live cluster (or torch) needed
def test_demo_sim_only_table_and_legend(tmp_path: Path, capsys) -> None:
    assert main(["demo", "--sim-only", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Part 1" not in out
    check_demo_table(out, tmp_path)


@pytest.mark.daemons
@pytest.mark.slow  # ~90 s: DDP training through a node crash on a live cluster, then the replays
def test_demo(tmp_path: Path, capsys) -> None:
    pytest.importorskip("torch")
    assert main(["demo", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Final weights, resumed run vs uninterrupted run: bitwise identical" in out
    assert "NODE_FAIL" in out and "COMPLETED" in out and "restart 1: resuming at step 40" in out
    checked = out.split("# Checked against the cluster's own records:\n", 1)[1].split("\n\n", 1)[0]
    assert checked.count("#   ok     ") == 6 and "FAILED" not in checked
    assert not (tmp_path / "story" / "logs").exists()  # kept only when a claim failed
    assert (tmp_path / "story" / "cluster" / "log" / "slurmctld.log").exists()
    check_demo_table(out, tmp_path)
