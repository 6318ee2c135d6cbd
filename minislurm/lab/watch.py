"""``watch squeue``, kept for a figure: each job's states and pending reasons as they changed.

Accounting keeps when a job was submitted, started and ended, not why it waited; the reason is
only ever in the queue's current view.  A :class:`Watch` polls the controller (a client of its
own, in a thread) a few times a second and keeps every change of a job's state or reason, so a
page can draw the lives of its jobs (:meth:`Watch.figure`) after running them.
"""

from __future__ import annotations

import threading

from minislurm.lab.figures import LabFigure
from minislurm.lab.terminal import DONE as FINISHED
from minislurm.lab.timeline import Span, lanes_figure


class Watch:
    """Poll ``cluster``'s queue every ``every`` seconds from now until :meth:`stop`.

    ``seen[job_id]`` is the job's name and its changes, (time, state, reason, nodes); times
    are the controller's: a start and an end at the moment it recorded them, other changes
    when first seen."""

    def __init__(self, cluster, every: float = 0.2):
        self.client = cluster.client()
        self.every = every
        self.seen: dict[int, tuple[str, list[tuple[float, str, str, str]]]] = {}
        self.now = 0.0
        self._done_before: set[int] | None = None  # jobs that had ended before the watch began
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="watch-squeue", daemon=True)
        self.poll()  # the queue as it is now, before anything that follows
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.poll()

    def poll(self) -> None:
        reply = self.client.call("GET", "/jobs")
        self.now = reply["now"]
        if self._done_before is None:
            self._done_before = {j["job_id"] for j in reply["jobs"] if j["state"] in FINISHED}
        for job in reply["jobs"]:
            state = job["state"]
            if job["job_id"] in self._done_before:
                continue
            when = job.get("start_time") if state == "RUNNING" else job.get("end_time") if state in FINISHED else None
            name, changes = self.seen.setdefault(job["job_id"], (job["name"], []))
            nodes = job.get("nodes") or ""
            if not changes:  # first seen: it was born pending
                if state == "PENDING":
                    when = job["submit_time"]
                else:
                    changes.append((job["submit_time"], "PENDING", "", ""))  # its reason went unseen
            if state in FINISHED and job.get("start_time") and changes[-1][1] == "PENDING":
                changes.append((job["start_time"], "RUNNING", "", nodes))  # it ran between two polls
            now = (state, job.get("reason") or "None", nodes)
            if not changes or changes[-1][1:] != now:
                changes.append((when or self.now, *now))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.poll()

    def lanes(self) -> tuple[dict[str, list[Span]], dict[str, str]]:
        """One lane per job: pending spans labelled with their reason, running spans with their
        nodes; and how each lane ends (its final state, or what it still is)."""
        lanes, ends = {}, {}
        for job_id, (name, changes) in self.seen.items():
            lane, key = [], f"{job_id} {name}"
            for (t, state, reason, nodes), nxt in zip(changes, [*changes[1:], None]):
                if state in FINISHED:
                    break
                label = reason if state == "PENDING" else nodes if state == "RUNNING" else ""
                lane.append(Span(t, nxt[0] if nxt else self.now, state, label))
            lanes[key] = lane
            last = changes[-1]
            ends[key] = last[1] if last[1] in FINISHED else f"still {last[1]}"
        return lanes, ends

    def figure(self, title: str = "") -> LabFigure:
        """Stop watching and draw what was seen."""
        self.stop()
        lanes, ends = self.lanes()
        return lanes_figure(lanes, ends=ends, title=title)
