"""Jobs on a time axis (minislurm.lab.timeline, minislurm.lab.watch): accounting's runs read
back into lanes, labels that fit, and a watch of a live queue that keeps each reason."""

from __future__ import annotations

from datetime import datetime

import pytest

from minislurm.lab.terminal import lab_cluster
from minislurm.lab.timeline import (Message, Span, failure_figure, job_lanes, lanes_figure, node_lanes,
                                    read_sacct, training_runs)
from minislurm.lab.watch import Watch

# sacct -D -X -P -o JobID,JobName,State,Submit,Start,End,NodeList of a job requeued once
SACCT = """JobID|JobName|State|Submit|Start|End|NodeList
7|ddp|NODE_FAIL|2026-01-01T10:00:00|2026-01-01T10:00:02|2026-01-01T10:00:20|gpu[01-02]
7|ddp|COMPLETED|2026-01-01T10:00:20|2026-01-01T10:00:25|2026-01-01T10:00:40|gpu[03-04]
8|eval|CANCELLED by 0|2026-01-01T10:00:01|Unknown|2026-01-01T10:00:30|None assigned
"""


def _t(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def test_accounting_lines_become_runs_and_a_requeued_job_waits_between_its_runs():
    runs = read_sacct(SACCT)
    assert [(r.job, r.state, r.nodes) for r in runs] == [
        ("7", "NODE_FAIL", ("gpu01", "gpu02")), ("7", "COMPLETED", ("gpu03", "gpu04")), ("8", "CANCELLED", ())]
    assert runs[2].start is None and runs[0].end == _t("2026-01-01T10:00:20")
    lanes = job_lanes(runs, notes={("7", 1): "resumed at step 20"})
    assert [(s.state, s.label) for s in lanes["7"]] == [
        ("PENDING", ""), ("NODE_FAIL", "NODE_FAIL"), ("PENDING", ""), ("COMPLETED", "resumed at step 20")]
    # the second wait runs from the first run's end (the requeue) to the second start
    assert (lanes["7"][2].start, lanes["7"][2].end) == (_t("2026-01-01T10:00:20"), _t("2026-01-01T10:00:25"))
    assert lanes["8"] == []  # it never ran
    by_node = node_lanes(runs)
    assert list(by_node) == ["gpu01", "gpu02", "gpu03", "gpu04"] and by_node["gpu03"][0].label == "job 7"


def test_labels_that_do_not_fit_their_span_are_left_out():
    lanes = {"a": [Span(0, 100, "PENDING", "Resources"), Span(100, 100.5, "RUNNING", "gpu[01-02]")]}
    fig = lanes_figure(lanes, ends={"a": "COMPLETED"}, marks=[(50, "gpu02 crashed")])
    texts = {t.get_text() for t in fig.axes[0].texts}
    assert {"Resources", "COMPLETED", "gpu02 crashed"} <= texts and "gpu[01-02]" not in texts
    assert [p.get_gid() for p in fig.axes[0].patches] == ["span:a:PENDING", "span:a:RUNNING"]
    assert fig.png().startswith(b"\x89PNG")


def test_messages_are_arrows_between_lanes_and_their_labels_do_not_cover_each_other():
    lanes = {"client": [Span(0, 1, "RUNNING", "sbatch")], "server": [Span(1, 9, "RUNNING", "job")],
             "node a": [], "node b": [Span(3, 8, "RUNNING", "tasks")]}
    fan_out = [Message(2, "server", 3, node, "LAUNCH") for node in ("node a", "node b")]
    # three requests in a fifth of a second: CREATE can be written only between server and node a,
    # START there or between node a and node b
    crowded = [Message(1, "client", 1, "server", "SUBMIT"), Message(1.2, "server", 1.3, "node b", "START"),
               Message(1.4, "node a", 1.4, "server", "CREATE")]
    fig = lanes_figure(lanes, messages=[*crowded, *fan_out, Message(8, "node b", 8.5, "client", "DONE", reply=True)])
    ax = fig.axes[0]
    arrows = {a.get_gid(): a for a in ax.texts if (a.get_gid() or "").startswith("message:")}
    assert set(arrows) == {"message:client>server:SUBMIT", "message:server>node b:START",
                           "message:node a>server:CREATE", "message:server>node a:LAUNCH",
                           "message:server>node b:LAUNCH", "message:node b>client:DONE"}
    assert arrows["message:server>node b:LAUNCH"].xy == (3, 3) and arrows["message:node b>client:DONE"].xyann == (8, 3)
    assert arrows["message:node b>client:DONE"].arrow_patch.get_linestyle() == "--"  # a reply
    labels = [t for t in ax.texts if (t.get_gid() or "").startswith("label:")]
    assert sorted(t.get_text() for t in labels) == ["CREATE", "DONE", "LAUNCH", "START", "SUBMIT"]  # LAUNCH once
    boxes = [t.get_window_extent() for t in labels]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    frame = ax.get_window_extent()
    assert all(frame.x0 <= b.x0 and b.x1 <= frame.x1 for b in boxes)
    assert fig.png().startswith(b"\x89PNG")


# examples/ddp's log of a run requeued after a node failure (chapter 7), and a chain's last link
LOG = """=== job 2, restart 0, on gpu[03-04] ===
job 2 restart 0: starting at step 0 on 2 ranks (run 2)
restart 0 | step 20: loss 0.390102, checkpoint written in 19.5 ms
slurmstepd-gpu03: error: *** JOB 2 ON gpu03 CANCELLED AT 2026-12-06T02:12:04 DUE TO NODE FAILURE ***
=== job 2, restart 1, on gpu[01-02] ===
job 2 restart 1: resuming at step 20 (checkpoint of restart 0)
restart 1 | step 40: loss 0.376912, checkpoint written in 22.2 ms
restart 1 | step 60: loss 0.537123, checkpoint written in 21.6 ms
done: 60 steps, final loss 0.537123, weights in resumed.pt
"""
LAST_LINK = """=== job 9, restart 0, on gpu01 ===
job 9 restart 0: resuming at step 400 (checkpoint of job 8 restart 0)
run 5 finished at step 400 (of 400); nothing to do
"""


def test_a_training_log_says_which_steps_each_run_trained():
    assert training_runs(LOG) == ["steps 0-20", "steps 20-60"]
    assert training_runs(LAST_LINK) == ["finished already"]


def test_a_failure_is_drawn_with_the_node_down_from_the_failed_runs_end():
    runs = read_sacct(SACCT)[:2]
    fig = failure_figure(runs, "gpu02", names={"7": "victim"}, notes={("7", 1): "steps 20-60"})
    ax = fig.axes[0]
    lanes = [t.get_text() for t in ax.get_yticklabels()]
    assert lanes == ["job 7 (victim)", "gpu01", "gpu02", "gpu03", "gpu04"]
    (down,) = [p for p in ax.patches if p.get_gid() == "span:gpu02:DOWN"]
    assert (down.get_x(), down.get_width()) == (20, 20)  # from the NODE_FAIL run's end to the last record
    assert "gpu02 DOWN: job 7 requeued" in {t.get_text() for t in ax.texts}


@pytest.mark.daemons
def test_a_watch_keeps_each_reason_a_job_waited_with_and_how_it_ended():
    with lab_cluster(nodes=1, gpus_per_node=1, quiet=True) as sh:
        done = sh.submit("sbatch --wrap true", show=False)
        sh.wait(done)
        watch = Watch(sh.cluster, every=0.1)
        held = sh.submit("sbatch --hold -J held --wrap 'sleep 1'", show=False)
        sh.until(lambda: sh.job(held)["reason"] == "JobHeldUser", what="the hold")
        sh.until(lambda: held in watch.seen and watch.seen[held][1][-1][2] == "JobHeldUser", what="the watch")
        sh(f"scontrol release {held}", show=False)
        sh.wait(held)
        started = sh.job(held)["start_time"]
        watch.stop()
        lanes, ends = watch.lanes()
    assert list(lanes) == [f"{held} held"]  # not the job that had ended before the watch began
    spans = lanes[f"{held} held"]
    assert ("PENDING", "JobHeldUser") in [(s.state, s.label) for s in spans]
    assert spans[-1].state == "RUNNING" and spans[-1].label == "gpu01"
    assert spans[-1].start == started  # the controller's own start time, not when it was seen
    assert ends[f"{held} held"] == "COMPLETED"
    assert all(a.end == b.start for a, b in zip(spans, spans[1:]))
