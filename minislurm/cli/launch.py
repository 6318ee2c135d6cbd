"""How srun runs a step: the tasks start on every node's agent at once, with the step credential
the controller signed, through a tree of agents (TreeWidth wide: a few connections for hundreds
of nodes); their output is relayed as it comes.  Signals are passed on to the tasks, except
Ctrl-C: one reports the tasks' state, a second within a second interrupts and then kills them
(see :class:`Interrupts`).  The exit code is the largest task exit code.
"""

from __future__ import annotations

import itertools
import json
import queue
import signal
import socket
import sys
import threading
import time

from minislurm.cli.stepinput import NOTHING, Forwarder, Input, credential_of, input_nodes, raw_mode, restore
from minislurm.client import Client, ClientError, Connection, controller_address
from minislurm.core.layout import span_requests, tree_spans


def _ranges(ids: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``0-2,5`` (how srun names a group of tasks)."""
    runs = [list(g) for _, g in itertools.groupby(enumerate(sorted(ids)), key=lambda p: p[1] - p[0])]
    return ",".join(str(r[0][1]) if len(r) == 1 else f"{r[0][1]}-{r[-1][1]}" for r in runs)


class Relay:
    """Prints task output as it arrives, a whole line at a time, as srun does: two tasks'
    lines never mix mid-line, and ``-l`` puts the task number before each.  Only ``-u``
    (unbuffered) or a terminal (``--pty``) passes the bytes on as they come, prompts too."""

    def __init__(self, label: bool, whole_lines: bool = True, out=None, err=None,
                 only: tuple[int | None, int | None] = (None, None)):
        """``out``/``err``: where each stream goes (srun's own by default; a file of ``srun -o``);
        ``only``: the one task whose stdout, stderr is shown (``srun -o N``), None for all."""
        self.targets = {"o": out or sys.stdout, "e": err or sys.stderr}
        self.routes: dict[int, dict] = {}  # a task whose streams go elsewhere (a heterogeneous step's group)
        self.only = dict(zip("oe", only))
        self.label = label
        self.whole_lines = whole_lines or label
        self.partial: dict[tuple[int, str], str] = {}
        self.events: queue.Queue = queue.Queue()

    def route(self, tasks, out=None, err=None) -> None:
        """Send these tasks' streams to ``out``/``err`` (srun's own when None)."""
        for task in tasks:
            self.routes[task] = {"o": out or sys.stdout, "e": err or sys.stderr}

    def write(self, task: int, kind: str, text: str) -> None:
        if self.only[kind] is not None and task != self.only[kind]:
            return
        out = self.routes.get(task, self.targets)[kind]
        if self.whole_lines:
            *lines, text = (self.partial.pop((task, kind), "") + text).split("\n")
            if text:
                self.partial[(task, kind)] = text
            prefix = f"{task}: " if self.label else ""
            text = "".join(f"{prefix}{line}\n" for line in lines)
        out.write(text)
        out.flush()

    def end(self, task: int) -> None:
        """The task has exited: its last line, even without a newline."""
        for kind in "oe":
            rest = self.partial.pop((task, kind), "")
            if rest:
                out = self.routes.get(task, self.targets)[kind]
                out.write(f"{task}: {rest}\n" if self.label else rest)
                out.flush()

    def flush(self) -> None:
        for task, _ in list(self.partial):
            self.end(task)


def _launch_span(nodes: list[str], addr: str, request: bytes, events: queue.Queue) -> None:
    """Start the tasks of ``nodes`` through the first one's agent, which passes the launch on
    (Slurm's TreeWidth fan-out: see :mod:`minislurm.slurmd.tasks`), and relay every node's lines."""
    finished: set[str] = set()
    host, port = addr.rsplit(":", 1)
    why = "the connection closed"
    try:
        conn = Connection((host, int(port)), timeout=None)
        conn.send("POST", "/steps/launch", request)
        status, headers = conn.reply()
        if status != 200:
            error = json.loads(conn.body(headers) or b"{}").get("error", f"HTTP {status}")
            for node in nodes:
                events.put(("error", node, error))
            return
        for line in conn.lines(headers):
            msg = json.loads(line)
            node = msg.get("node")
            if msg.get("done"):
                events.put(("closed", node, None))
            elif "failed" in msg:
                events.put(("error", node, msg["failed"]))
            elif "lost" in msg:
                events.put(("lost", node, msg["lost"]))
            else:
                events.put(("msg", node, msg))
                continue
            finished.add(node)
    except (OSError, ValueError, IndexError) as exc:
        why = str(exc)
    for node in nodes:
        if node not in finished:
            events.put(("lost", node, why))


def _verdict(node: str, events: queue.Queue) -> None:
    """Wait for the controller to say whether ``node`` failed (DOWN) or is alive after all."""
    client = Client()
    try:
        timeout = float(str(client.call("GET", "/config")["config"].get("SlurmdTimeout", "300")).split()[0])
    except (ClientError, ValueError):
        timeout = 300.0
    deadline = time.time() + timeout + 10
    while time.time() < deadline:
        try:
            state = {n["name"]: n for n in client.call("GET", "/nodes")["nodes"]}.get(node, {})
        except ClientError:
            state = {}
        if state.get("state", "").startswith("down"):
            events.put(("nodefail", node, None))
            return
        time.sleep(0.5)
    events.put(("nodefail", node, None))


def _signal_nodes(step: dict, signum: int) -> None:
    for node, addr in step["addrs"].items():
        host, port = addr.rsplit(":", 1)
        try:
            conn = Connection((host, int(port)), timeout=5)
            conn.send("POST", "/steps/signal", json.dumps({"credential": credential_of(step, node),
                                                           "signal": int(signum)}).encode())
            conn.body(conn.reply()[1])
            conn.close()
        except (OSError, ValueError, IndexError):
            pass


FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2,
             signal.SIGALRM)


class Interrupts:
    """srun's Ctrl-C (``_handle_intr`` in src/srun/srun_job.c): the first one only reports the
    tasks' state; a second within a second (or the first with --quit-on-interrupt) sends SIGINT
    to the tasks and forces the step's termination (SIGKILL)."""

    def __init__(self, step: dict, quit_on_intr: bool):
        self.step, self.quit, self.last, self.forced = step, quit_on_intr, -10.0, False
        self.name = f"StepId={step['job']['job_id']}.{step['step_id']}"

    def handle(self, started: set[int], exits: dict[int, tuple[int, int]]) -> None:
        now = time.monotonic()
        if not (self.quit or now - self.last < 1.0):
            self.last = now
            print("srun: interrupt (one more within 1 sec to abort)", file=sys.stderr)
            self.status(started, exits)
            return
        print(f"srun: sending Ctrl-C to {self.name}", file=sys.stderr)
        print("srun: forcing job termination" if not self.forced else "srun: job abort in progress",
              file=sys.stderr)
        sys.stderr.flush()
        kills = [signal.SIGINT] + ([signal.SIGKILL] if not self.forced else [])
        self.forced = True
        threading.Thread(target=lambda: [_signal_nodes(self.step, k) for k in kills], daemon=True).start()

    def status(self, started: set[int], exits: dict[int, tuple[int, int]]) -> None:
        """One line per group of tasks, as src/common/slurm_step_layout's task_state_print does."""
        every = set(range(self.step["ntasks"]))
        groups = (("running", started - set(exits)),
                  ("exited abnormally", {t for t, (c, s) in exits.items() if c or s}),
                  ("exited", {t for t, (c, s) in exits.items() if not (c or s)}),
                  ("unknown", every - started - set(exits)))
        for what, tasks in groups:
            if tasks:
                print(f"srun: {self.name} task{'s' if len(tasks) > 1 else ''} {_ranges(list(tasks))}: {what}",
                      file=sys.stderr)
        sys.stderr.flush()


def own_address() -> str:
    """This host's address for SLURM_LAUNCH_NODE_IPADDR.  Its name may resolve to nothing (a
    node in its own network namespace, as under ``cluster up --netns``): then the address this
    host reaches the controller from, which the routing table gives without sending a packet."""
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        pass
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(controller_address())
            return s.getsockname()[0]
    except (OSError, ClientError):
        return "127.0.0.1"


def _for_steps(job: dict) -> dict:
    """The job's facts a step's agents use (its GPUs per node and batch environment are the batch
    script's business: on 2,048 nodes they would be most of every launch request)."""
    return {k: v for k, v in job.items() if k not in ("gpus", "environment")}


def run_step(step: dict, argv: list[str], env: dict, cwd: str, *, label: bool, unbuffered: bool = False,
             gpus_per_task: int | None, quit_on_intr: bool = False, usage: dict | None = None,
             stdin: Input = NOTHING, pty: tuple[int, int] | None = None, streams: dict | None = None,
             files: dict | None = None, task_scripts: dict | None = None, verbose: bool = False,
             own_allocation: bool = False, parts: list[tuple[dict, dict]] | None = None,
             routes: dict[tuple[int, ...], dict] | None = None) -> int:
    """Start the step's tasks on all its nodes and relay until they end; returns srun's exit code.
    ``usage`` gets what the tasks used, as the nodes report it: CPU added up, the largest memory,
    and each node's own figures (per task, and its GPUs') under ``nodes``.
    ``stdin`` is what srun forwards, and to which tasks (see :mod:`.stepinput`); ``pty`` (rows,
    columns) runs task 0 on a pseudo-terminal of that size.  ``streams`` may send the output
    elsewhere (``out``, ``err``, ``only``: see :class:`Relay`); ``files`` are the per-task file names the agents open
    (``output_file``, ``error_file``, ``input_file``: see :mod:`minislurm.slurmd.tasks`);
    ``task_scripts`` the programs each task runs before and after (``task_prolog``, ``task_epilog``);
    ``verbose`` (srun -v) says when each node's tasks start and every group of exits;
    ``own_allocation``: srun made the job for this step, and says when the step was cancelled;
    ``parts``: a heterogeneous step's components, each (its part of the step, what its launch
    says differently: its command, environment, files), launched with its own credential,
    and ``routes`` where each part's tasks' streams go."""
    relay = Relay(label, whole_lines=not unbuffered and pty is None, **(streams or {}))
    for tasks, where in (routes or {}).items():
        relay.route(tasks, where.get("out"), where.get("err"))
    # Who runs it, which tasks and which GPUs: the agents take these from the credential alone.
    body = {"credential": step["credential"], "job": _for_steps(step["job"]), "argv": argv, "environment": env, "cwd": cwd,
            "gpus_per_task": gpus_per_task, "launcher": [own_address(), 0], "input": stdin.takes,
            "pty": pty is not None, "winsize": list(pty or ()), **(files or {}), **(task_scripts or {})}
    body["tree_width"] = step.get("tree_width", 50)
    for part, own in parts or [(step, {})]:
        request = span_requests({**body, "credential": part["credential"], "job": _for_steps(part["job"]), **own})
        for span in tree_spans(part["nodes"], body["tree_width"]):
            threading.Thread(target=_launch_span, args=(span, part["addrs"][span[0]], request(span), relay.events),
                             daemon=True).start()
    forwarder = None if stdin.fd is None else Forwarder(step, stdin, input_nodes(step, stdin.takes, pty is not None))
    interrupts = Interrupts(step, quit_on_intr)
    # Handlers only queue the signal: the loop below acts on it, never mid-write.
    old = {s: signal.signal(s, lambda signum, _f: relay.events.put(("signal", None, signum))) for s in FORWARDED}
    exits: dict[int, tuple[int, int]] = {}
    task_node: dict[int, str] = {}
    open_nodes, lost = set(step["nodes"]), []
    terminal = raw_mode() if pty else None  # keys go to the remote terminal as typed, Ctrl-C too
    ended = Ended(f"StepId={step['job']['job_id']}.{step['step_id']}" if verbose else None)
    cancelled = False
    try:
        while open_nodes:
            try:
                kind, node, msg = relay.events.get(timeout=ended.patience())
            except queue.Empty:
                ended.say(task_node)
                continue
            if forwarder and node:
                forwarder.heard(node)
            if kind == "signal":
                if msg == signal.SIGINT:
                    interrupts.handle(set(task_node), exits)
                else:
                    threading.Thread(target=_signal_nodes, args=(step, msg), daemon=True).start()
            elif kind == "msg":
                if "started" in msg:
                    task_node.update({t: node for t in msg["started"]})
                    if verbose:
                        print(f"srun: launch/slurm: _task_start: Node {node}, {len(msg['started'])} tasks started",
                              file=sys.stderr)
                elif "exit" in msg:
                    exits[msg["t"]] = (msg["exit"], msg["sig"])
                    relay.end(msg["t"])
                    ended.add(msg["t"], msg["exit"], msg["sig"])
                elif "usage" in msg:
                    if usage is not None:
                        u = msg["usage"]
                        usage.update(cpu=usage.get("cpu", 0) + u["cpu"], rss=max(usage.get("rss", 0), u["rss"]),
                                     ntasks=usage.get("ntasks", 0) + u["ntasks"])
                        usage.setdefault("nodes", {})[node] = u
                elif "error" in msg:
                    print(f"srun: error: {node}: {msg['error']}", file=sys.stderr)
                elif "stepd" in msg:  # the step was cancelled (scancel, time limit)
                    relay.targets["e"].write(msg["stepd"])
                    relay.targets["e"].flush()
                    cancelled = True
                else:
                    relay.write(msg["t"], "o" if "o" in msg else "e", msg.get("o", msg.get("e", "")))
            else:
                open_nodes.discard(node)
                if kind == "error":
                    print(f"srun: error: {node}: task launch failed: {msg}", file=sys.stderr)
                    lost.append(node)
                elif kind == "nodefail":
                    print(f"srun: error: Node failure on {node}", file=sys.stderr)
                    lost.append(node)
                elif kind == "lost" or (kind == "closed" and any(t not in exits for t, n in task_node.items()
                                                                  if n == node)):
                    # A dropped connection is not yet a dead node: as in Slurm, the controller
                    # decides (after SlurmdTimeout) and then ends or requeues the job.
                    open_nodes.add(node)
                    threading.Thread(target=_verdict, args=(node, relay.events), daemon=True).start()
    finally:
        restore(terminal)
        for s, h in old.items():
            signal.signal(s, h)
    relay.flush()
    ended.say(task_node)
    if cancelled and own_allocation:
        print(f"srun: Force Terminated StepId={step['job']['job_id']}.{step['step_id']}", file=sys.stderr)
    return _worst(exits, lost)


class Ended:
    """srun's ``NODE: task N: Exited with exit code C`` lines, said as the tasks end (the first
    to end first, as slurmstepd's exit messages reach srun); tasks of one node that end
    together with the same status share a line (``tasks 0-2``).  "Together" is within
    ``WINDOW`` seconds of each other: an agent reports each task on its own."""

    WINDOW = 0.2

    def __init__(self, verbose: str | None = None):
        """``verbose``: the step's name (``StepId=J.S``) when srun -v says every exit, the
        clean ones too, each group after srun's "Received task exit notification" line."""
        self.pending: list[tuple[int, int, int]] = []  # (task, code, signal), in arrival order
        self.verbose = verbose

    def add(self, task: int, code: int, sig: int) -> None:
        if code or sig or self.verbose:
            self.pending.append((task, code, sig))

    def patience(self) -> float | None:
        return self.WINDOW if self.pending else None

    def say(self, task_node: dict[int, str]) -> None:
        lines: dict[tuple[str, int, int], list[int]] = {}
        for task, code, sig in self.pending:
            lines.setdefault((task_node.get(task, "?"), code, sig), []).append(task)
        self.pending.clear()
        for (node, code, sig), tasks in lines.items():
            named = f"task{'s' if len(tasks) > 1 else ''} {_ranges(tasks)}"
            if self.verbose:
                print(f"srun: launch/slurm: _task_finish: Received task exit notification for {len(tasks)} "
                      f"task{'s' if len(tasks) > 1 else ''} of {self.verbose} (status=0x{code << 8 | sig:04x}).",
                      file=sys.stderr)
                if not (code or sig):
                    print(f"srun: launch/slurm: _task_finish: {node}: {named}: Completed", file=sys.stderr)
                    continue
            what = f"Exited with exit code {code}" if not sig else (signal.strsignal(sig) or f"Signal {sig}")
            print(f"srun: error: {node}: {named}: {what}", file=sys.stderr)


def _worst(exits: dict[int, tuple[int, int]], lost: list[str]) -> int:
    """srun's exit code: the largest task exit code (128 + signal for a killed task); 1 if a
    node was lost."""
    worst = 1 if lost else 0
    for code, sig in exits.values():
        if code or sig:
            worst = max(worst, code if not sig else 128 + sig)
    return worst
