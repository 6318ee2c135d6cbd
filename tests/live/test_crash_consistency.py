"""Crash consistency and a soak (issue 9): a live cluster keeps every promise while its
controller is killed with kill -9 at random moments (commits slowed down at random, so that
kills land between a decision and its commit) and while nodes crash and come back.

CI runs each for ``MINISLURM_CHAOS_SECONDS`` (default 25 s) with ``MINISLURM_CHAOS_CLIENTS``
client threads (default 3) besides one srun loop; the figures in RELIABILITY.md come from longer
runs (300 s, 8 clients).  The figures are printed (``pytest -s``).
"""

from __future__ import annotations

import json
import os
import random
import time

import pytest

from chaos import Workload, check, settle

pytestmark = pytest.mark.live
CLUSTER = {"inactive_limit": 10}
SECONDS = float(os.environ.get("MINISLURM_CHAOS_SECONDS") or 25)
CLIENTS = int(os.environ.get("MINISLURM_CHAOS_CLIENTS") or 3)
pytestmark = pytest.mark.timeout(300 + 3 * SECONDS)  # a long soak (MINISLURM_CHAOS_SECONDS) may take its time


def report(name: str, figures: dict) -> None:
    print(f"\n{name}: {json.dumps(figures)}")


def seeded() -> tuple[int, random.Random]:
    """A seed (``MINISLURM_CHAOS_SEED`` replays a run) and the random source it makes."""
    seed = int(os.environ.get("MINISLURM_CHAOS_SEED") or time.time())
    return seed, random.Random(seed)


def test_kill_9_at_random_moments_loses_nothing_acknowledged(live):
    seed, rng = seeded()
    runs = live.work / "runs-kill9"
    kills = 0
    with Workload(live, runs, seed, threads=CLIENTS) as load:
        deadline = time.time() + SECONDS
        while time.time() < deadline:
            time.sleep(rng.uniform(2, 6))
            delay = rng.choice(("0", "0.05", "0.2", "0.5"))
            live.c.restart_controller(crash=True, env={"MINISLURM_COMMIT_DELAY": delay})
            kills += 1
    live.c.restart_controller(crash=True)  # last one with plain commits, for the checks
    settle(live, load.books)
    figures = check(live, load.books, runs)
    report("kill -9", {"seed": seed, "seconds": SECONDS, "controller_kills": kills, **figures})
    assert figures["acknowledged_jobs"] > 10


def test_soak_with_node_failures_and_controller_restarts(live):
    seed, rng = seeded()
    runs = live.work / "runs-soak"
    restarts = 0
    with Workload(live, runs, seed, threads=CLIENTS) as load:
        deadline = time.time() + SECONDS
        while time.time() < deadline:
            time.sleep(rng.uniform(2, 5))
            if rng.random() < 0.6:
                node = rng.choice(["gpu01", "gpu02"])
                killed_at = time.time()
                live.c.kill_node(node)
                time.sleep(rng.uniform(1, 8))  # sometimes long enough to go DOWN (SlurmdTimeout 5)
                live.c.start_node(node)
                load.books.node_kills.append((node, killed_at, time.time()))
            else:
                live.c.restart_controller(crash=rng.random() < 0.5)
                restarts += 1
    settle(live, load.books)
    figures = check(live, load.books, runs)
    report("soak", {"seed": seed, "seconds": SECONDS, "controller_restarts": restarts, **figures})
    assert figures["acknowledged_jobs"] > 10
