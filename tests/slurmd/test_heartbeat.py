"""An agent answers the controller's pings while its own event loop is busy: the heartbeat has
a thread and a port of its own (minislurm.slurmd.heartbeat), so a node whose jobs keep the
agent's loop working is not taken for dead."""

import asyncio
import json
import time
import urllib.error
import urllib.request

from minislurm.common.auth import Signer
from minislurm.slurmd.agent import NodeAgent
from minislurm.slurmd.host import Host

KEY = b"k" * 32


def _get(url: str, token: str) -> tuple[int, dict, float]:
    started = time.monotonic()
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, json.loads(r.read()), time.monotonic() - started
    except urllib.error.HTTPError as exc:
        return exc.code, {}, time.monotonic() - started


def test_pings_are_answered_while_the_agents_loop_is_held_up(tmp_path):
    def make_agent(name: str) -> NodeAgent:  # its controller is nowhere: it keeps trying to register
        return NodeAgent(name, key=KEY, ctld="127.0.0.1:9", conf=None, cpus=8, memory=64_000, gpus=4,
                         spool=tmp_path / "spool" / name)

    async def main():
        host = Host(make_agent, ["gpu01", "gpu02"])
        await host.start()
        try:
            port = host.heartbeat.port
            assert all(a.heartbeat_port == port for a in host.agents.values())
            ctld, node = Signer(KEY).ctld_token(), Signer(KEY).node_token("gpu01")
            url = f"http://127.0.0.1:{port}/ping/gpu01"
            # The loop is held for 3 s (as by a long stretch of work for jobs) while pings come.
            ping = asyncio.get_running_loop().run_in_executor(None, lambda: (time.sleep(0.5), _get(url, ctld))[1])
            time.sleep(3)
            answer = await ping
            others = await asyncio.to_thread(lambda: [
                _get(f"http://127.0.0.1:{port}/ping/gpu02", node)[0],  # a node's token is not the controller's
                _get(f"http://127.0.0.1:{port}/ping/gpu99", ctld)[0]])  # no such node here
            await host.crash("gpu02")  # a crashed node answers nothing
            crashed = await asyncio.to_thread(_get, f"http://127.0.0.1:{port}/ping/gpu02", ctld)
            return answer, others, crashed[0]
        finally:
            await host.stop()

    (status, body, took), others, crashed = asyncio.run(main())
    assert (status, body) == (200, {"jobs": [], "finished": []})
    assert took < 1.0, f"the ping took {took:.2f} s"  # before: pings came to the node port this loop serves
    assert others == [401, 404] and crashed == 404
