"""Node health the way Slurm does it: the controller pings, agents answer.

Every SlurmdTimeout/3 seconds each agent is pinged.  A missed ping marks the node NOT_RESPONDING
(sinfo's ``*``; it gets no new work).  A node silent for SlurmdTimeout since its last answer goes
DOWN with reason ``Not responding`` (within a quarter second, however slow the ping rounds)
and its jobs are requeued or failed.  With ReturnToService=1 a node that was
DOWN only for not responding comes back when it answers again; with 2, any DOWN node does.

An agent whose loop is slow but alive answers ``busy`` from its heartbeat process
(:mod:`minislurm.slurmd.heartbeat`): the node is responding, but the answer carries no job
list to act on.  Any other answer lists the jobs the agent is running.  Any the controller did not give that node (a
run that was requeued elsewhere while the node was cut off) is killed: fencing.  Whatever an
answer makes the controller tell an agent (a kill, a stop, a launch) is told once what it
follows from is on disk (``store.then``): a ping never outruns a commit.  A batch job
the node should run but does not list is relaunched if its agent never confirmed the launch
(the controller may have died before telling it), and otherwise lost with the node's run.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from minislurm.core.states import JobState
from minislurm.lifecycle import every

if TYPE_CHECKING:
    from minislurm.ctld.controller import Controller

log = logging.getLogger("minislurm.ctld")
NOT_RESPONDING = "Not responding"
LAUNCH_GRACE = 5.0  # seconds a new batch job may be missing from its agent's list


def ping_interval(ctl: "Controller") -> float:
    timeout = ctl.config.slurmd_timeout
    return max(0.5, timeout / 3) if timeout else 100.0


OVERDUE_CHECK = 0.25  # seconds between looks for nodes silent for SlurmdTimeout


async def health_loop(ctl: "Controller") -> None:
    for agent in ctl.agents.values():
        agent.last_response = ctl.clock()
    # Silence is judged on its own clock, not only after a ping round: a round waits for its
    # slowest ping (an address that no longer answers takes the whole ping timeout), so
    # judging after rounds alone would mark a dead node DOWN up to two rounds late.
    checked = [ctl.clock()]
    ctl.spawn(every(OVERDUE_CHECK, lambda: overdue(ctl, checked), log))
    await every(ping_interval(ctl), lambda: ping_all(ctl), log)


async def overdue(ctl: "Controller", checked: list[float]) -> None:
    """Every node silent for SlurmdTimeout since its last answer goes DOWN now.

    Silence is what the controller did not receive while it was listening: when this look
    comes late (the controller's own loop was held up: a long pass, a slow disk, a starved
    CPU), answers may be waiting unread, so the time it was deaf is not counted against any
    node (``checked`` holds when the last look was)."""
    timeout, now = ctl.config.slurmd_timeout, ctl.clock()
    deaf = now - checked[0] - 2 * OVERDUE_CHECK
    checked[0] = now
    if deaf > 0:
        for agent in ctl.agents.values():
            agent.last_response += deaf
    if not timeout:
        return
    nodes = ctl.state.nodes
    await asyncio.gather(*(silent(ctl, name, now) for name, agent in ctl.agents.items()
                           if not nodes.down[nodes.index[name]] and now - agent.last_response >= timeout))


async def ping_all(ctl: "Controller") -> None:
    """Ping every node at once: one request to each heartbeat process, which answers for all
    the nodes its agent hosts, and one to each node that has none.  Each answer (or its absence)
    is taken as it comes, so a process that does not answer delays no other's nodes."""
    hosted: dict[str, list[str]] = {}
    for name, agent in ctl.agents.items():
        hosted.setdefault(agent.heartbeat, []).append(name)
    timeout = ping_interval(ctl)

    async def ping_heartbeat(addr: str, names: list[str]) -> None:
        reply = await ctl.rpc.call(addr, "/ping", timeout=timeout)
        answers = reply.get("nodes") if isinstance(reply, dict) else None
        answers = answers if isinstance(answers, dict) else {}
        now = ctl.clock()  # a node it no longer serves is absent, as a closed port would be
        await asyncio.gather(*(responded(ctl, name, answers[name]) if isinstance(answers.get(name), dict)
                               else silent(ctl, name, now) for name in names))

    async def ping_node(name: str) -> None:
        addr = ctl.agents[name].addr
        reply = await ctl.rpc.call(addr, "/ping", timeout=timeout) if addr else None
        await (responded(ctl, name, reply) if reply is not None else silent(ctl, name, ctl.clock()))

    await asyncio.gather(*(ping_heartbeat(addr, names) for addr, names in hosted.items() if addr),
                         *(ping_node(name) for name in hosted.get(None, [])))


async def silent(ctl: "Controller", name: str, now: float) -> None:
    nodes = ctl.state.nodes
    n = nodes.index[name]
    if not nodes.no_respond[n]:
        nodes.set_responding(n, False)
        ctl.state.touch()
    timeout = ctl.config.slurmd_timeout
    if timeout and not nodes.down[n] and now - ctl.agents[name].last_response >= timeout:
        log.error("Nodes %s not responding, setting DOWN", name)
        nodes.set_down(n, True, NOT_RESPONDING)
        ctl.save_node(name, reason_by=ctl.slurm_user)
        await ctl.running.node_failed(n, NOT_RESPONDING)


def _number(value, kind, default):
    """A host reading from a ping answer, or ``default`` when it is missing or not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or value != value:
        return default
    return kind(value)


async def responded(ctl: "Controller", name: str, reply: dict) -> None:
    nodes = ctl.state.nodes
    n = nodes.index[name]
    agent = ctl.agents[name]
    agent.last_response = ctl.clock()
    agent.cpu_load = _number(reply.get("cpu_load"), float, agent.cpu_load)
    agent.free_mem = _number(reply.get("free_mem"), int, agent.free_mem)
    changed = not agent.registered
    agent.registered = True  # an answer to a restarted controller's ping counts as registering
    if nodes.no_respond[n]:
        nodes.set_responding(n, True)
        changed = True
    rts = ctl.config.return_to_service
    if nodes.down[n] and (rts == 2 or (rts == 1 and nodes.reason[n] == NOT_RESPONDING)):
        log.info("node %s returned to service", name)
        nodes.set_down(n, False)
        ctl.save_node(name)
        changed = True
    if reply.get("busy") is None:  # a busy agent's heartbeat has no fresh list: nothing to fence by
        for job_id, inc, code, sig in reply.get("finished", []):
            await ctl.running.job_ended(job_id, inc, exit_code=code, signal=sig)
        await fence(ctl, name, reply.get("jobs", []))
    if changed:
        ctl.state.touch()
        ctl.request_pass()


async def fence(ctl: "Controller", name: str, running: list) -> None:
    """Kill what the agent runs but should not; notice batch jobs it lost."""
    n = ctl.state.nodes.index[name]
    have = {(j, inc) for j, inc in running}
    for job_id, inc in have:
        job = ctl.state.jobs.get(job_id)
        owns = (job is not None and job.state is JobState.RUNNING and job.restart_count == inc
                and n in job.alloc.nodes)
        if not owns:
            log.warning("node %s runs job %s.%s it does not own: killing it", name, job_id, inc)
            ctl.running.stop_on([n], job_id, inc, why=None)
        elif ctl.live[job_id].ending and not (ctl.run_of(job).stop_delivered or ctl.run_of(job).stop_held):
            # A stop acknowledged before a restart: tell it, once saved.  (One being decided is
            # told by whoever decided it, once saved and answered: RunningJobs.decide_stop.)
            ctl.run_of(job).stop_held = True
            ctl.store.then(lambda job=job: ctl.spawn(ctl.running.deliver_ending(job)))
    ctl.store.flush_soon()
    now = ctl.clock()
    for job in ctl.state.jobs_on_node(n):
        live = ctl.live[job.job_id]
        missing = ((job.job_id, job.restart_count) not in have and live.batch and job.alloc.nodes[0] == n
                   and now - job.start_time > LAUNCH_GRACE)
        if not missing:
            continue
        if live.ending:  # asked to stop, and gone: stopped as asked
            await ctl.running.job_ended(job.job_id, job.restart_count, exit_code=0, signal=15)
        elif not live.launched:  # its launch may never have been sent: send it, once its start is saved
            log.warning("batch job %s was never confirmed by %s: launching it again", job.job_id, name)
            ctl.store.then(lambda job=job, inc=job.restart_count: _launch(ctl, job, inc))
            ctl.store.flush_soon()
        else:  # the agent restarted and lost it: like Slurm, requeue (or end) the run
            log.error("batch job %s is gone from %s", job.job_id, name)
            ctl.running.lost_on_node(job, n)
            await ctl.commit()


def _launch(ctl: "Controller", job, incarnation: int) -> None:
    if job.state is JobState.RUNNING and job.restart_count == incarnation:
        ctl.spawn(ctl.running.launch(job, incarnation))


async def register(ctl: "Controller", info: dict) -> dict:
    """An agent starts: note its address, check what it reports, tell it what to kill."""
    name = info["name"]
    nodes = ctl.state.nodes
    n = nodes.index[name]
    cfg = nodes.configs[n]
    ctl.agents[name].addr = info["addr"]
    ctl.agents[name].heartbeat = info.get("heartbeat")
    ctl.agents[name].boot_time = float(info.get("boot_time") or 0.0)
    ctl.agents[name].os_boot_time = float(info.get("os_boot_time") or 0.0)
    ctl.agents[name].registered = True
    ctl.agents[name].os = str(info.get("os") or "")
    if int(info.get("gpus", cfg.gpus)) < cfg.gpus:
        nodes.set_drain(n, True, f"gres/gpu count reported lower than configured ({info['gpus']} < {cfg.gpus})")
    elif int(info.get("cpus", cfg.cpus)) < cfg.cpus:
        nodes.set_drain(n, True, "Low CPUs")
    elif int(info.get("memory", cfg.real_memory)) < cfg.real_memory:
        nodes.set_drain(n, True, f"Low RealMemory (reported:{info['memory']} < 100.00% of "
                                 f"configured:{cfg.real_memory})")
    ctl.save_node(name, reason_by=ctl.slurm_user if nodes.drain[n] else None)
    await ctl.store.commit()
    await responded(ctl, name, {"jobs": info.get("jobs", []), "finished": info.get("finished", []),
                                **{k: info[k] for k in ("cpu_load", "free_mem") if k in info}})
    ctl.state.touch()
    ctl.request_pass()
    return {"ok": True, "cluster": ctl.config.cluster_name}
