"""The controller tells an agent process that hosts many nodes once for all of them (a job's end
on 2,048 virtual nodes in 8 processes is 8 requests, not 2,048), and each node on its own where
its process does not answer for it."""

from __future__ import annotations

import asyncio

from minislurm.ctld.agents import Agent, call_nodes


class Recorder:
    """Agent processes as the controller's RPC client sees them: ``hosts`` maps an address to
    the nodes its process serves; ``silent`` addresses answer nothing."""

    def __init__(self, hosts: dict[str, list[str]], silent: set[str] = frozenset()):
        self.hosts, self.silent, self.calls = hosts, silent, []

    async def call(self, addr: str, path: str, payload: dict | None = None, timeout: float | None = None):
        self.calls.append((addr, payload.get("nodes")))
        if addr in self.silent:
            return None
        if "nodes" not in payload:
            return {"ok": True, "known": True}
        return {"nodes": {n: {"ok": True, "known": True} for n in payload["nodes"] if n in self.hosts[addr]}}


def _agents(layout: dict[str, str | None]) -> dict[str, Agent]:
    """node -> its process's heartbeat (None: a node with a process of its own)."""
    agents = {}
    for i, (name, heartbeat) in enumerate(layout.items()):
        agents[name] = Agent(f"127.0.0.1:{7000 + i}")
        agents[name].heartbeat = heartbeat
    return agents


def test_one_request_per_agent_process_naming_its_nodes():
    agents = _agents({"a1": "h:1", "a2": "h:1", "a3": "h:1", "b1": "h:2", "b2": "h:2", "c1": None})
    rpc = Recorder({"127.0.0.1:7000": ["a1", "a2", "a3"], "127.0.0.1:7003": ["b1", "b2"],
                    "127.0.0.1:7005": ["c1"]})
    replies = asyncio.run(call_nodes(rpc, agents, "/jobs/terminate", {"job_id": 4, "inc": 0}))
    assert sorted(rpc.calls, key=str) == sorted([("127.0.0.1:7000", ["a1", "a2", "a3"]),
                                                 ("127.0.0.1:7003", ["b1", "b2"]), ("127.0.0.1:7005", None)], key=str)
    assert set(replies) == set(agents) and all(r == {"ok": True, "known": True} for r in replies.values())


def test_a_node_its_process_does_not_answer_for_is_asked_alone():
    agents = _agents({"a1": "h:1", "a2": "h:1", "a3": "h:1", "b1": "h:2", "b2": "h:2", "b3": "h:2"})
    agents["a3"].addr = None  # not registered: nothing to tell
    rpc = Recorder({"127.0.0.1:7003": ["b1", "b3"]}, silent={"127.0.0.1:7000", "127.0.0.1:7004"})
    replies = asyncio.run(call_nodes(rpc, agents, "/jobs/signal", {"job_id": 4, "inc": 0}))
    # a1's process does not answer: a1 and a2 are asked alone; b2 is not served by b1's (cut off)
    assert sorted(rpc.calls, key=str) == sorted([
        ("127.0.0.1:7000", ["a1", "a2"]), ("127.0.0.1:7000", None), ("127.0.0.1:7001", None),
        ("127.0.0.1:7003", ["b1", "b2", "b3"]), ("127.0.0.1:7004", None)], key=str)
    assert replies == {"a1": None, "a2": {"ok": True, "known": True}, "b1": {"ok": True, "known": True},
                       "b3": {"ok": True, "known": True}, "b2": None}
