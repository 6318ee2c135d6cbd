"""A workload under fire, and the books that say whether the cluster kept its word.

Client threads submit batch jobs (through the same request sbatch sends), cancel some,
requeue others and run sruns, each noting what the controller *acknowledged*; meanwhile the
test kills the controller (kill -9), crashes nodes and brings them back.  Every job's script
logs each start and end of each run (job id, incarnation, node, time) in a file of its own.
:func:`check` then compares three sources: the acknowledgements, what ran (the logs), and
what the controller says (squeue's API and sacct's records).
"""

from __future__ import annotations

import random
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from minislurm.cli.sbatch import build_spec, request_for
from minislurm.client import ClientError

SCRIPT = """#!/bin/bash
log={runs}/$SLURM_JOB_ID.log
trap 'echo "end $SLURM_JOB_ID $SLURM_RESTART_COUNT $SLURMD_NODENAME $EPOCHREALTIME term" >> $log; exit 0' TERM
echo "start $SLURM_JOB_ID $SLURM_RESTART_COUNT $SLURMD_NODENAME $EPOCHREALTIME" >> $log
sleep {seconds} & wait
echo "end $SLURM_JOB_ID $SLURM_RESTART_COUNT $SLURMD_NODENAME $EPOCHREALTIME ok" >> $log
"""
MAX_PENDING = 30
FINISHED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"}


@dataclass
class Books:
    submitted: dict[int, str] = field(default_factory=dict)  # job id -> the name it was given
    cancelled: dict[int, float] = field(default_factory=dict)  # job id -> when scancel was acknowledged
    requeued: dict[int, float] = field(default_factory=dict)
    sruns: dict[str, int] = field(default_factory=dict)  # name -> exit code of each srun that ran
    node_kills: list[tuple[str, float, float]] = field(default_factory=list)  # node, killed at, back at
    refused: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class Workload:
    def __init__(self, live, runs: Path, seed: int, threads: int = 3):
        self.live, self.runs, self.rng = live, runs, random.Random(seed)
        self.tag = runs.name  # in every job's name, so two workloads on one cluster never mix
        self.books = Books()
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._client, args=(i,), daemon=True) for i in range(threads)]
        self.threads.append(threading.Thread(target=self._sruns, daemon=True))
        runs.mkdir(parents=True, exist_ok=True)

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=120)

    # -- what the clients do -------------------------------------------------------------
    def _client(self, i: int) -> None:
        rng = random.Random(self.rng.random())
        api = self.live.c.client()
        n = 0
        while not self.stop.is_set():
            choice = rng.random()
            try:
                if choice < 0.6 and self._room(api):
                    n += 1
                    self._submit(api, f"{self.tag}-w{i}-{n}", rng)
                elif choice < 0.8:
                    self._act(api, "cancel", self.books.cancelled, rng, parity=0)
                else:
                    self._act(api, "requeue", self.books.requeued, rng, parity=1)
            except ClientError:
                with self.books.lock:
                    self.books.refused += 1
            time.sleep(rng.uniform(0.2, 0.8))

    def _room(self, api) -> bool:
        """Whether the queue is short enough for more: the load should stress the controller,
        not grow a backlog that takes longer to drain than the run lasted."""
        return api.call("GET", "/jobs", query={"states": "PENDING", "fields": "job_id"})["count"] < MAX_PENDING

    def _submit(self, api, name: str, rng: random.Random) -> None:
        script = SCRIPT.format(runs=self.runs, seconds=round(rng.uniform(0.3, 2.5), 1))
        argv = ["-J", name, "-o", "/dev/null", "--gres=gpu:" + str(rng.choice((1, 2, 4))), "-t", "5"]
        spec, rest = build_spec(script, {}, argv, now=time.time(), path="(stdin)")
        reply = api.call("POST", "/jobs", request_for(spec, script, rest, None))
        with self.books.lock:
            self.books.submitted[reply["job_id"]] = name

    def _act(self, api, action: str, book: dict, rng: random.Random, parity: int) -> None:
        """Cancel (even job ids) or requeue (odd ones, running) a job that was submitted."""
        with self.books.lock:
            candidates = [j for j in self.books.submitted if j % 2 == parity and j not in book]
        if not candidates:
            return
        job_id = rng.choice(candidates[-20:])
        if action == "requeue" and api.call("GET", f"/jobs/{job_id}")["state"] != "RUNNING":
            return
        try:
            api.call("POST", f"/jobs/{job_id}/{action}", {"uid": 0} if action == "cancel" else {})
        except ClientError as exc:
            if exc.status in (400, 404):  # already ended: refused, nothing acknowledged
                return
            raise
        with self.books.lock:
            book[job_id] = time.time()

    def _sruns(self) -> None:
        n = 0
        while not self.stop.is_set():
            n += 1
            name = f"{self.tag}-srun-{n}"
            r = subprocess.run([str(self.live.c.dir / "bin" / "srun"), "-N1", "-J", name, "-t", "2", "sleep", "0.5"],
                               env=self.live.c.env(), cwd=self.live.work, capture_output=True, timeout=300)
            with self.books.lock:
                self.books.sruns[name] = r.returncode
            time.sleep(0.5)


# -- the checks -------------------------------------------------------------------------------
def _runs_of(log: Path) -> list[dict]:
    """Each run in a job's log: incarnation, node, start and end (None if it never logged one)."""
    runs: list[dict] = []
    for line in log.read_text().splitlines():
        kind, _, inc, node, at, *how = line.split()
        if kind == "start":
            runs.append({"inc": int(inc), "node": node, "start": float(at), "end": None})
        else:
            for run in reversed(runs):
                if run["inc"] == int(inc) and run["node"] == node and run["end"] is None:
                    run["end"] = float(at)
                    break
    return runs


def check(live, books: Books, runs_dir: Path) -> dict:
    """Assert every promise; return the figures (for the closing note and RELIABILITY.md)."""
    jobs = {j["job_id"]: j for j in live.api.call("GET", "/jobs", query={"ids": ",".join(map(str, books.submitted))})["jobs"]} if books.submitted else {}
    records = live.api.call("GET", "/acct", query={"duplicates": "1"})["records"]
    by_job: dict[int, list[dict]] = {}
    for r in records:
        if r["step"] is None:
            by_job.setdefault(r["job_id"], []).append(r)
    # 1. nothing acknowledged is lost, duplicated or renumbered
    for job_id, name in books.submitted.items():
        assert job_id in jobs, f"acknowledged job {job_id} ({name}) is gone"
        assert jobs[job_id]["name"] == name, (job_id, name, jobs[job_id]["name"])
    everyone = live.api.call("GET", "/acct")["records"]
    for name in books.submitted.values():
        ids = {r["job_id"] for r in everyone if r["name"] == name and r["step"] is None}
        assert len(ids) == 1, f"{name} was queued {len(ids)} times: {ids}"
    # 2. acknowledged intents were carried out
    for job_id in books.cancelled:
        assert jobs[job_id]["state"] == "CANCELLED", (job_id, jobs[job_id]["state"])
    kills = books.node_kills
    for job_id, acked in books.requeued.items():
        assert jobs[job_id]["restart_count"] >= 1, (job_id, jobs[job_id])
        # Its run ended REQUEUED, or NODE_FAIL when its node died before the run had stopped
        # (the requeue happens all the same, as Slurm's would).
        assert any(r["state"] == "REQUEUED" or (r["state"] == "NODE_FAIL" and any(
            node == r["nodes"] and back >= acked for node, _, back in kills)) for r in by_job[job_id]), by_job[job_id]
    # 3. no job ran twice at once, no run started twice; accounting matches what ran
    overlaps = 0
    for job_id in books.submitted:
        log = runs_dir / f"{job_id}.log"
        runs = _runs_of(log) if log.exists() else []
        incs = [r["inc"] for r in runs]
        assert len(incs) == len(set(incs)), f"job {job_id} started a run twice: {runs}"
        for run in runs:  # a run on a crashed node ended when its node did
            if run["end"] is None:
                run["end"] = min((at for node, at, back in kills if node == run["node"] and at >= run["start"]),
                                 default=None)
        ordered = sorted(runs, key=lambda r: r["start"])
        for a, b in zip(ordered, ordered[1:]):
            if a["end"] is None or b["start"] < a["end"]:
                overlaps += 1
                raise AssertionError(f"job {job_id} ran twice at once: {a} and {b}")
        recorded = {r["restart"]: r for r in by_job.get(job_id, [])}
        for run in runs:
            assert run["inc"] in recorded, f"job {job_id} run {run['inc']} ran but has no record: {recorded}"
            assert recorded[run["inc"]]["state"] != "PENDING", (job_id, run, recorded[run["inc"]])
        final = jobs[job_id]
        if final["state"] == "COMPLETED":
            last = [r for r in runs if r["inc"] == final["restart_count"]]
            assert last and last[0]["end"] is not None, f"job {job_id} COMPLETED without a finished run: {runs}"
        assert recorded[final["restart_count"]]["state"] == final["state"], (job_id, final, recorded)
    # 4. every srun that ran to the end left a COMPLETED allocation behind
    srun_jobs = {r["name"]: r for r in everyone if r["name"] in books.sruns and r["step"] is None}
    for name, code in books.sruns.items():
        if code == 0:
            assert srun_jobs[name]["state"] == "COMPLETED", (name, srun_jobs[name])
    return {"acknowledged_jobs": len(books.submitted), "cancels": len(books.cancelled),
            "requeues": len(books.requeued), "sruns_ok": sum(1 for c in books.sruns.values() if c == 0),
            "refused_or_unanswered": books.refused, "runs": sum(1 for _ in runs_dir.glob("*.log")),
            "node_kills": len(kills), "lost": 0, "overlaps": overlaps}


def settle(live, books: Books, timeout: float = 300) -> None:
    """Wait until every job (acknowledged or not, batch or srun) has finished."""
    deadline = time.time() + timeout
    while True:
        left = [j for j in live.api.call("GET", "/jobs")["jobs"] if j["state"] not in FINISHED]
        if not left:
            return
        if time.time() > deadline:
            raise AssertionError(f"{len(left)} jobs never finished: {[(j['job_id'], j['state'], j['reason']) for j in left[:10]]}")
        time.sleep(0.5)
