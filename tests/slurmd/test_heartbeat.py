"""An agent answers the controller's pings while its own event loop is busy, even wedged: the
heartbeat is a process of its own (minislurm.slurmd.heartbeat) with no interpreter lock in
common with the agent, so a node whose jobs keep the agent working is not taken for dead; a
loop silent for longer than the heartbeat's bound is wedged and answers nothing; and the
heartbeat dies with its agent, so a killed agent's nodes do go silent."""

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import types
import urllib.error
import urllib.request

from minislurm.common.auth import Signer
from minislurm.slurmd import heartbeat
from minislurm.slurmd.agent import NodeAgent
from minislurm.slurmd.host import Host

KEY = b"k" * 32

# An agent process hosting gpu01 and gpu02, its controller nowhere (it keeps trying to register);
# it prints its heartbeat's port and process id.
AGENT = """
import asyncio, sys
from minislurm.slurmd.agent import NodeAgent
from minislurm.slurmd.host import Host
from minislurm.slurmd import heartbeat
heartbeat.WEDGED = float(sys.argv[2])
def make_agent(name):
    return NodeAgent(name, key=b"k" * 32, ctld="127.0.0.1:9", conf=None, cpus=8, memory=64_000, gpus=4,
                     spool=sys.argv[1] + "/" + name)
async def main():
    host = Host(make_agent, ["gpu01", "gpu02"])
    await host.start()
    print(host.heartbeat.port, getattr(getattr(host.heartbeat, "proc", None), "pid", 0), flush=True)
    await asyncio.sleep(3600)
asyncio.run(main())
"""


def _get(url: str, token: str) -> tuple[int, dict, float]:
    started = time.monotonic()
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, json.loads(r.read()), time.monotonic() - started
    except urllib.error.HTTPError as exc:
        try:
            body = json.loads(exc.read())
        except ValueError:
            body = {}
        return exc.code, body, time.monotonic() - started


def _until(predicate, within: float = 20.0):
    """Poll ``predicate`` until it returns something true (a bound so a failure cannot hang)."""
    deadline = time.monotonic() + within
    while not (got := predicate()):
        assert time.monotonic() < deadline, "not within the bound"
        time.sleep(0.1)
    return got


def _agent_process(tmp_path, wedged: float) -> tuple[subprocess.Popen, int, int]:
    proc = subprocess.Popen([sys.executable, "-c", AGENT, str(tmp_path), str(wedged)], stdout=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    port, pid = proc.stdout.readline().split()
    return proc, int(port), int(pid)


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"  # ended, not yet collected
    except FileNotFoundError:
        return True


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
            await asyncio.to_thread(_until, lambda: _get(url, ctld)[0] == 200)
            # The loop is held for 3 s by work that keeps the interpreter lock while pings come.
            ping = asyncio.get_running_loop().run_in_executor(None, lambda: (time.sleep(0.5), _get(url, ctld))[1])
            end = time.monotonic() + 3
            while time.monotonic() < end:
                sum(range(10_000))
            answer = await ping
            others = await asyncio.to_thread(lambda: [
                _get(f"http://127.0.0.1:{port}/ping/gpu02", node)[0],  # a node's token is not the controller's
                _get(f"http://127.0.0.1:{port}/ping/gpu99", ctld)[0]])  # no such node here
            every = await asyncio.to_thread(_get, f"http://127.0.0.1:{port}/ping", ctld)
            await host.crash("gpu02")  # a crashed node answers nothing
            crashed = await asyncio.to_thread(_get, f"http://127.0.0.1:{port}/ping/gpu02", ctld)
            left = await asyncio.to_thread(_until, lambda: (a := _get(f"http://127.0.0.1:{port}/ping", ctld))
                                           and "gpu02" not in a[1].get("nodes", {"gpu02": 0}) and a)
            return answer, others, crashed[0], every, left
        finally:
            await host.stop()

    (status, body, took), others, crashed, every, left = asyncio.run(main())
    readings = {k: body.pop(k) for k in ("cpu_load", "free_mem") if k in body}  # the host's, for show node
    assert status == 200 and body in ({"jobs": [], "finished": []}, {"busy": body.get("busy")})
    assert "busy" in body or set(readings) == {"cpu_load", "free_mem"}
    assert took < 1.0, f"the ping took {took:.2f} s"  # before: pings came to the node port this loop serves
    assert others == [401, 404] and crashed == 404
    # One ping answers for every node the process hosts (one request a round, not one a node).
    assert every[0] == 200 and set(every[1]["nodes"]) == {"gpu01", "gpu02"}
    assert left[0] == 200 and set(left[1]["nodes"]) == {"gpu01"}


def test_a_stopped_agent_is_busy_then_wedged(tmp_path):
    """SIGSTOP holds the agent's whole process, every thread of it: its heartbeat answers
    ``busy`` while the loop's last beat is young enough, then nothing; SIGCONT brings the
    fresh answers back."""
    proc, port, _ = _agent_process(tmp_path, wedged=4.0)
    ctld = Signer(KEY).ctld_token()
    url = f"http://127.0.0.1:{port}/ping/gpu01"
    try:
        fresh = _until(lambda: (a := _get(url, ctld))[0] == 200 and "jobs" in a[1] and a)
        os.kill(proc.pid, signal.SIGSTOP)
        busy = _until(lambda: (a := _get(url, ctld))[0] == 200 and "busy" in a[1] and a)
        wedged = _until(lambda: (a := _get(url, ctld))[0] == 503 and a)
        wedged_all = _get(f"http://127.0.0.1:{port}/ping", ctld)
        os.kill(proc.pid, signal.SIGCONT)
        again = _until(lambda: (a := _get(url, ctld))[0] == 200 and "jobs" in a[1] and a)
    finally:
        proc.kill()
        proc.wait()
    # Before: the heartbeat was a thread of the stopped process: the ping timed out.
    for answer in (fresh[1], again[1]):  # the host's readings aside (show node's CPULoad, FreeMem)
        assert answer.pop("cpu_load") >= 0 and answer.pop("free_mem") > 0
    assert fresh[1] == again[1] == {"jobs": [], "finished": []}
    assert busy[1]["busy"] >= heartbeat.FRESH and "has not run" in wedged[1]["error"]
    assert wedged_all[0] == 503  # one loop for all its nodes: none of them answers


def test_the_heartbeat_dies_with_its_agent(tmp_path):
    proc, port, pid = _agent_process(tmp_path, wedged=60.0)
    ctld = Signer(KEY).ctld_token()
    assert pid not in (0, proc.pid) and _get(f"http://127.0.0.1:{port}/ping/gpu01", ctld)[0] in (200, 404)
    proc.kill()  # kill -9: the agent cannot tell its heartbeat anything
    proc.wait()
    _until(lambda: _gone(pid))
    refused = _until(lambda: _refused(port))
    assert refused


def _refused(port: int) -> bool:
    try:
        _get(f"http://127.0.0.1:{port}/ping/gpu01", "x")
    except urllib.error.URLError:
        return True
    return False


def test_the_answer_follows_the_age_of_the_loops_last_beat():
    now = [100.0]
    answers = heartbeat.Answers(wedged=60.0, clock=lambda: now[0])
    answers.take(json.dumps({"t": 100.0, "nodes": {"gpu01": {"jobs": [[7, 0]], "finished": []}}}).encode())
    seen = []
    for age in (0.0, heartbeat.FRESH + 0.1, 59.0, 61.0):
        now[0] = 100.0 + age
        seen.append(answers.answer("gpu01"))
    assert seen[0] == (200, {"jobs": [[7, 0]], "finished": []})
    assert seen[1] == (200, {"busy": round(heartbeat.FRESH + 0.1, 1)}) and seen[2] == (200, {"busy": 59.0})
    assert seen[3][0] == 503 and answers.answer("gpu02")[0] == 404  # not a node its agent serves


def test_the_nodes_answers_are_written_only_when_they_change():
    """Hundreds of virtual nodes, four beats a second: a beat carries the time and the machine's
    readings, and the nodes' answers only when one of them has changed; the heartbeat keeps
    the last ones it was given."""
    written: list[dict] = []
    stdin = types.SimpleNamespace(is_closing=lambda: False, write=lambda line: written.append(json.loads(line)))
    node = types.SimpleNamespace(runs=types.SimpleNamespace(live={}), unreported={}, offline=False)
    beats = heartbeat.Heartbeat({"gpu01": node}, "127.0.0.1", KEY)
    beats.proc = types.SimpleNamespace(stdin=stdin)
    beats.beat()
    beats.beat()
    node.unreported[(7, 0)] = (0, 0)
    beats.beat()
    assert ["nodes" in b for b in written] == [True, False, True] and all("host" in b for b in written)
    answers = heartbeat.Answers(wedged=60.0, clock=lambda: written[-1]["t"])
    for beat in (written[0], {**written[1], "host": {"cpu_load": 2.5}}):
        answers.take(json.dumps(beat).encode())
    assert answers.answer("gpu01") == (200, {"jobs": [], "finished": [], "cpu_load": 2.5})
    answers.take(json.dumps(written[2]).encode())
    assert answers.answer("gpu01")[1]["finished"] == [[7, 0, 0, 0]]
