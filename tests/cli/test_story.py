"""``minislurm demo``'s node-failure story checks every claim it prints against the cluster's
records (offline here; tests/cli/test_sim_cli.py::test_demo tells the whole story live)."""

from __future__ import annotations

from minislurm.cli.story import Told, check_story, last_checkpoint, resumed_at

LOG = """=== job 2, restart 0, on node[1-2] ===
job 2 restart 0: starting at step 0 on 8 ranks
restart 0 | step 20: loss 0.912, checkpoint written in 3.1 ms
restart 0 | step 40: loss 0.801, checkpoint written in 2.9 ms
=== job 2, restart 1, on node[1-2] ===
job 2 restart 1: resuming at step 40 (checkpoint of restart 0)
restart 1 | step 60: loss 0.702, checkpoint written in 3.0 ms
restart 1 | step 80: loss 0.650, checkpoint written in 3.0 ms
restart 1 | step 100: loss 0.611, checkpoint written in 3.0 ms
done: 100 steps, final loss 0.611000, weights in resumed.pt
"""


def told(**changes) -> Told:
    story = dict(job_id=2, victim="node2", reference_state="COMPLETED",
                 runs=[{"JobID": "2", "State": "NODE_FAIL", "NodeList": "node[1-2]"},
                       {"JobID": "2", "State": "COMPLETED", "NodeList": "node[1-2]"}],
                 restart_count=1, final_state="COMPLETED", log=LOG, last_checkpoint_before_crash=40,
                 same_weights=True, numbers=1089)
    story.update(changes)
    return Told(**story)


def failed(t: Told) -> list[str]:
    return [c.said for c in check_story(t) if not c.holds]


def test_the_story_as_told_holds_claim_by_claim():
    claims = check_story(told())
    assert len(claims) == 6 and all(c.holds for c in claims), [c for c in claims if not c.holds]
    assert claims[3].said == "restart 1 resumed at step 40, the last checkpoint before the crash"


def test_a_second_node_failure_and_a_failed_end_are_not_a_happy_ending_even_with_equal_weights():
    """The run that was reported: NODE_FAIL, NODE_FAIL, FAILED, and "bitwise identical"."""
    runs = [{"JobID": "2", "State": s, "NodeList": "node[1-2]"} for s in ("NODE_FAIL", "NODE_FAIL", "FAILED")]
    log = LOG.replace("done: 100 steps", "=== job 2, restart 2, on node[1-2] ===\n"
                      "job 2 restart 2: resuming at step 100 (checkpoint of restart 1)\n")
    bad = failed(told(runs=runs, restart_count=2, final_state="FAILED", log=log))
    assert len(bad) == 4
    assert bad[0].startswith("sacct -D shows job 2 run twice")
    assert bad[1].startswith("the job kept its id (2) and was requeued once")
    assert bad[2].startswith("restart 1 resumed")  # a restart 2 followed it
    assert bad[3].startswith("the job ended COMPLETED")
    seen = {c.said: c.seen for c in check_story(told(runs=runs))}
    assert "NODE_FAIL on node[1-2], NODE_FAIL on node[1-2], FAILED on node[1-2]" in \
        seen["sacct -D shows job 2 run twice: NODE_FAIL (on node2), then COMPLETED"]


def test_each_claim_fails_on_its_own():
    assert failed(told(reference_state="FAILED")) == ["the uninterrupted reference run COMPLETED"]
    assert len(failed(told(runs=[{"JobID": "2", "State": "NODE_FAIL", "NodeList": "node1"},
                                 {"JobID": "2", "State": "COMPLETED", "NodeList": "node[1-2]"}]))) == 1
    assert len(failed(told(runs=[{"JobID": "2", "State": "NODE_FAIL", "NodeList": "node[1-2]"},
                                 {"JobID": "3", "State": "COMPLETED", "NodeList": "node[1-2]"}]))) == 1
    assert len(failed(told(log=LOG.replace("resuming at step 40", "resuming at step 20")))) == 1
    assert len(failed(told(log=LOG.replace("resuming at step 40 (checkpoint of restart 0)",
                                           "starting at step 0 on 8 ranks")))) == 1
    assert failed(told(same_weights=False)) == [
        "its final weights are bitwise identical to the uninterrupted run's (1089 numbers)"]
    # A checkpoint completes a moment before its line is printed: a crash in between resumes one later.
    assert failed(told(log=LOG.replace("resuming at step 40", "resuming at step 60"))) == []


def test_the_log_readers():
    assert last_checkpoint(LOG) == 40 and last_checkpoint(LOG, 1) == 100
    assert resumed_at(LOG, 1) == 40 and resumed_at(LOG, 2) is None
