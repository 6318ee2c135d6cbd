"""SlurmdTimeout counts what the controller did not hear while it was listening.

A controller whose own loop is held up (a long pass, a slow disk, a CPU taken by other work)
reads no answers meanwhile; when it resumes, that stall must not count as the nodes'
silence, or every node goes DOWN at once though none failed (the class-fairness issue's 224
of 256 nodes).  A node that really stops answering still goes DOWN SlurmdTimeout after its
last answer.  On the fake clock: a stall is the clock moving on while the loop runs nothing.
"""

import asyncio

from minislurm.core.states import JobState
from tests.ctld.ctldkit import run


def _stall(seconds: float) -> None:
    """The controller's loop runs nothing for ``seconds`` (time passes; no callback runs)."""
    asyncio.get_running_loop().now += seconds


def test_a_stall_of_the_controller_sets_no_node_down(tmp_path):
    async def test(h):
        job_id = await h.submit()
        await h.until(lambda: h.job(job_id).state is JobState.RUNNING)
        _stall(12)  # twice SlurmdTimeout
        await asyncio.sleep(2)  # the overdue looks and a ping round after it
        nodes = h.ctl.state.nodes
        return [nodes.names[n] for n in range(len(nodes)) if nodes.down[n]], h.job(job_id)

    down, job = run(test, tmp_path, slurmd_timeout=6)
    # Before: both nodes went DOWN (back at their next answer) and the job was requeued.
    assert down == [] and (job.state, job.restart_count) == (JobState.RUNNING, 0)


def test_a_dead_node_still_goes_down_after_a_stall(tmp_path):
    async def test(h):
        name = h.ctl.state.nodes.names[0]
        n = h.ctl.state.nodes.index[name]
        h.agents.crash(name)
        _stall(3)
        await h.until(lambda: h.ctl.state.nodes.down[n], step=0.01)
        silent_for = asyncio.get_running_loop().time() - h.ctl.agents[name].last_response
        others = [h.ctl.state.nodes.down[m] for m in range(1, len(h.ctl.state.nodes))]
        return silent_for, others

    silent_for, others = run(test, tmp_path, slurmd_timeout=6)
    assert 6 <= silent_for <= 6 + 0.26 and not any(others)


def test_a_busy_agent_is_responding_and_keeps_its_job(tmp_path):
    """Its heartbeat answers ``busy`` (the agent's loop is slow): no job list comes with it, so
    the controller neither counts the node silent nor takes its batch job for lost."""
    async def test(h):
        job_id = await h.submit()
        await h.until(lambda: h.job(job_id).state is JobState.RUNNING)
        for node in h.agents.nodes.values():
            node.busy = True
        await asyncio.sleep(30)  # five SlurmdTimeouts, well past the launch grace
        nodes = h.ctl.state.nodes
        return ([nodes.names[n] for n in range(len(nodes)) if nodes.down[n] or nodes.no_respond[n]],
                h.job(job_id))

    flagged, job = run(test, tmp_path, slurmd_timeout=6)
    # Before: an answer without a job list lost the batch job ("gone from" its node): requeued.
    assert flagged == [] and (job.state, job.restart_count) == (JobState.RUNNING, 0)
