"""The sinfo and sbatch explorers (headless), and the live-cluster helpers the book pages use."""

from __future__ import annotations

import pytest

from minislurm.lab import SbatchExplorer, SinfoExplorer
from minislurm.lab.requeue_demo import requeue_demo
from minislurm.lab.sbatch_view import DEFAULT_SCRIPT, classify, explain
from minislurm.lab.sinfo_view import cluster_state, sinfo_text
from minislurm.lab.terminal import lab_cluster

# -- sinfo --------------------------------------------------------------------------------------


def test_sinfo_groups_nodes_by_state_with_hostlists():
    text = sinfo_text(["alloc", "alloc", "mix", "idle", "drain", "down*"])
    rows = [line.split() for line in text.splitlines()]
    assert rows[0] == ["PARTITION", "AVAIL", "TIMELIMIT", "NODES", "STATE", "NODELIST"]
    assert ["gpu*", "up", "infinite", "2", "alloc", "gpu[01-02]"] in rows
    assert [r[4] for r in rows[1:]] == ["down*", "drain", "mix", "alloc", "idle"]  # Slurm's state order


def test_sinfo_layouts_and_conditions():
    conds = ["drng", "idle", "down*"]
    summary = sinfo_text(conds, "-s")
    assert "NODES(A/I/O/T)" in summary and "0/1/2/3" in summary  # a draining node counts as other
    reasons = sinfo_text(conds, "-R")
    assert "GPU 3 ECC errors" in reasons and "Not responding" in reasons
    assert len(sinfo_text(conds, "-N").splitlines()) == 4
    nodes = cluster_state(conds).nodes
    assert not nodes.usable[0] and nodes.usable[1] and not nodes.usable[2]
    debug = sinfo_text(["idle"] * 3, debug_nodes=2)
    assert "debug        up      30:00      2   idle gpu[01-02]" in debug


def test_sinfo_explorer():
    ex = SinfoExplorer()
    assert "gpu[01-02]" in ex.table.value and ex.result.startswith("PARTITION")
    ex.nodes[0].value = "idle"
    assert "gpu[01,04]" in ex.result  # the two idle nodes share one row
    ex.layout.value = "-R"
    assert ex.result.startswith("REASON") and "$ sinfo -R" in ex.table.value
    gids = {p.get_gid() for p in ex.fig.axes[0].patches}
    assert "node:0:idle" in gids and "node:5:down*" in gids


# -- sbatch ---------------------------------------------------------------------------------------


def test_directive_rules():
    kinds = dict(classify(DEFAULT_SCRIPT))
    assert kinds["#SBATCH --nodes=2"] == "directive"
    assert kinds["  #SBATCH --partition=debug"] == "ignored"  # indented: a comment
    assert kinds["module load cuda"] == "command" and kinds["#SBATCH --requeue"] == "ignored"


def test_precedence_script_env_command_line():
    r = explain(DEFAULT_SCRIPT, "SBATCH_TIMELIMIT=30 SBATCH_JOB_NAME=env", "--nodes=1")
    assert r.error is None
    assert (r.final("--time"), r.winner("--time")) == ("30 min", "environment")
    assert (r.final("--nodes"), r.winner("--nodes")) == ("1", "command line")
    assert (r.final("--gres"), r.winner("--gres")) == ("gpu:4", "script")
    assert r.final("--job-name") == "env" and r.output_file == "env-1234.out"
    assert r.final("--partition") == "" and r.final("--requeue") == ""  # the ignored lines
    assert explain(DEFAULT_SCRIPT, "", "-J cli --array=0-3 -o %x_%A_%a.out").output_file == "cli_1234_0.out"


def test_sbatch_errors_are_slurms():
    assert explain("echo hi").error.startswith("sbatch: error: This does not look like a batch script.")
    assert explain(DEFAULT_SCRIPT, "", "--time=abc").error == "sbatch: error: Invalid --time specification"
    assert "NAME=value" in explain(DEFAULT_SCRIPT, "oops", "").error


def test_sbatch_explorer():
    ex = SbatchExplorer()
    assert ex.result.final("--nodes") == "1" and "command line" in ex.table.value
    ex.cli.value = ""
    assert ex.result.final("--nodes") == "2"
    ex.script.value = DEFAULT_SCRIPT.replace("  #SBATCH --partition", "#SBATCH --partition")
    assert ex.result.final("--partition") == "debug"
    gids = [p.get_gid() for p in ex.fig.axes[0].patches]
    assert "line:6:directive" in gids and "line:8:command" in gids
    ex.script.value = "no shebang"
    assert "does not look like a batch script" in ex.table.value


# -- live helpers ---------------------------------------------------------------------------------


@pytest.mark.daemons
def test_terminal_and_requeue_demo(capsys):
    with lab_cluster(nodes=2, gpus_per_node=1) as sh:
        sh("squeue | grep JOBID")
        assert sh("sinfo -h", show=False).split()[4] == "idle"
        cluster = sh.cluster
        demo = requeue_demo(sh, show=False)
    assert not cluster.procs and not sh.work.exists()  # stopped and cleaned up
    assert demo.states == ["NODE_FAIL", "COMPLETED"] and demo.restart_count == 1
    assert demo.resumed_after == 5 and 7 <= demo.crashed_after < 10 and demo.log.count("done: all 20 steps") == 1
    assert demo.records[0]["NodeList"] == demo.victim != demo.records[1]["NodeList"]
    out = capsys.readouterr().out
    # The terminal first says which cluster it runs on (MINISLURM_CLUSTER: local here).
    assert out.startswith("# the lab cluster: a local cluster: 2 nodes x 1 GPU,")
    assert "\n\n$ squeue | grep JOBID\n" in out and "NODELIST(REASON)" in out
