"""srun's standard input for its tasks, and its terminal under ``--pty``.

As in Slurm, srun reads its stdin (or the file ``--input`` names) and every task of the step
reads the same bytes (``--input=all``, the default), or only task N (``--input=N``), or none
(``--input=none``: each task reads /dev/null).  srun reads eagerly, whether or not a task reads:
in ``while read x; do srun ...; done < list`` the first srun takes the rest of the list, as
Slurm's does.  With ``--pty`` task 0 runs on a pseudo-terminal on its node; srun's own terminal
is put in raw mode meanwhile, so that every key (Ctrl-C and Ctrl-D included) goes to it as typed.
A file name with ``%t``, ``%n`` or ``%N`` (one file per task or node) is opened on the nodes
instead (:func:`minislurm.cli.srun.step_files`).
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import queue
import select
import struct
import sys
import termios
import threading
import time
import tty
from collections import namedtuple

from minislurm.client import Connection

CHUNK = 65536
BACKLOG = 16  # chunks queued for a node before the reading waits for it (its tasks read slowly)


class Input(namedtuple("Input", "takes fd first", defaults=("none", None, b""))):
    """What srun forwards: which tasks read it (``takes``: ``all``, ``none`` or a task id), from
    which descriptor (``fd``; None: nothing), and what was read of it already (``first``).
    (collections' namedtuple, not typing's: srun would import typing for it alone.)"""

    __slots__ = ()


NOTHING = Input()


def input_source(value: str | None) -> Input:
    """What ``--input`` asks for: srun's stdin, or the file named (which every task reads).
    Nothing is forwarded for ``none`` and for a stdin that is /dev/null, closed or already at
    its end: the tasks then read /dev/null directly, as before srun forwarded input (and no
    thread or request is spent on it).  OSError if the file cannot be opened."""
    if value == "/dev/null" or (value and "%" in value):  # none, as the option parser rewrites it
        return NOTHING
    if value and value.lower() != "all" and not value.isdigit():
        fd, takes = os.open(value, os.O_RDONLY), "all"
    else:
        fd, takes = 0, int(value) if value and value.isdigit() else "all"
    try:
        if os.isatty(fd) or not select.select([fd], [], [], 0)[0]:
            return Input(takes, fd)  # nothing yet: it comes later, or never
        first = os.read(fd, CHUNK)
    except (OSError, ValueError):
        return NOTHING  # a closed stdin
    return Input(takes, fd, first) if first else NOTHING


def window_size() -> tuple[int, int] | None:
    """(rows, columns) of srun's terminal, from its stdout as Slurm's srun asks; None if it is
    not a terminal."""
    try:
        rows, cols, _, _ = struct.unpack("HHHH", fcntl.ioctl(1, termios.TIOCGWINSZ, b"\0" * 8))
    except OSError:
        return None
    return rows, cols


def raw_mode() -> list | None:
    """Put srun's terminal (its stdin) in raw mode; what :func:`restore` needs to undo it."""
    if not os.isatty(0):
        return None
    saved = termios.tcgetattr(0)
    tty.setraw(0)
    return saved


def restore(saved: list | None) -> None:
    if saved is not None:
        termios.tcsetattr(0, termios.TCSADRAIN, saved)


def _in_background(fd: int) -> bool:
    """Whether ``fd`` is a terminal whose foreground job is not srun's (``srun ... &``):
    reading it then would stop srun (SIGTTIN); Slurm's srun leaves it alone until brought back."""
    try:
        return os.isatty(fd) and os.tcgetpgrp(fd) != os.getpgrp()
    except OSError:
        return False


class Forwarder:
    """One daemon thread reads the input and queues each chunk for every node that takes it; a
    daemon thread per node posts the chunks to that node's agent (``POST /steps/input``, with
    the step credential) once it has answered the launch, then end of file.  Nothing here keeps
    srun from ending with its tasks: an input that never ends only keeps a daemon thread."""

    def __init__(self, step: dict, source: Input, nodes: list[str]):
        self.step, self.source = step, source.fd
        self.queues = {n: queue.Queue(maxsize=BACKLOG) for n in nodes}
        for q in self.queues.values():
            if source.first:
                q.put(source.first)
        self.ready = {n: threading.Event() for n in nodes}
        threading.Thread(target=self._read, daemon=True).start()
        for node in nodes:
            threading.Thread(target=self._send, args=(node,), daemon=True).start()

    def heard(self, node: str) -> None:
        """The node has answered: its tasks have started (input may go there), or never will
        (its agent refuses the input, and what was queued for it is dropped)."""
        if node in self.ready:
            self.ready[node].set()

    def _read(self) -> None:
        while True:
            if _in_background(self.source):
                time.sleep(0.2)
                continue
            try:
                data = os.read(self.source, CHUNK)
            except OSError:
                data = b""
            for q in self.queues.values():
                q.put(data)
            if not data:
                return

    def _send(self, node: str) -> None:
        self.ready[node].wait()
        host, port = self.step["addrs"][node].rsplit(":", 1)
        conn = None
        chunks = self.queues[node]
        while True:
            data = chunks.get()
            body = {"credential": credential_of(self.step, node), "data": base64.b64encode(data).decode(), "eof": not data}
            try:
                conn = conn or Connection((host, int(port)), timeout=None)
                conn.send("POST", "/steps/input", json.dumps(body).encode())
                status, headers = conn.reply()
                taking = json.loads(conn.body(headers) or b"{}").get("open") if status == 200 else False
            except (OSError, ValueError, IndexError):
                taking = False
            if not data:
                break
            if not taking:  # no task there reads any more: let the reading go on for the others
                while chunks.get():
                    pass
                break
        if conn:
            conn.close()


def credential_of(step: dict, node: str) -> str:
    """The credential of the step's part on ``node`` (a heterogeneous step has one per component)."""
    return step.get("credentials", {}).get(node, step["credential"])


def input_nodes(step: dict, takes: str | int, pty: bool) -> list[str]:
    """The nodes whose tasks read the input: task 0's with --pty, one task's, or all."""
    wanted = 0 if pty else takes
    if wanted == "all":
        return list(step["nodes"])
    return [n for n, tasks in zip(step["nodes"], step["task_ids"]) if wanted in tasks]


def pty_refused() -> None:
    """Slurm 22.05's words when --pty is asked for without a terminal for its output."""
    print("srun: error: ioctl(TIOCGWINSZ): Inappropriate ioctl for device\n"
          "srun: error: Not using a pseudo-terminal, disregarding --pty option", file=sys.stderr)
