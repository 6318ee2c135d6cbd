"""The class dashboard in headless Chromium against a live cluster: what the page shows is what
the commands say (sinfo, squeue, squeue --start, scontrol show job -d, sshare, sacct -D), a
change shows within 2 seconds, and without a token it shows nothing.

The page is driven by playwright's Python package and Debian's chromium (no browser download),
every request that leaves localhost refused.  Screenshots go to out/dashboard/ (or
``$MINISLURM_ARTIFACTS``); with ``MINISLURM_BOOK_IMAGES=1`` the first one also replaces the
book's picture (book/images/dashboard.png).  Without chromium or playwright the tests skip,
unless ``MINISLURM_REQUIRE_BROWSER=1`` (set by .ci/run).
"""

from __future__ import annotations

import getpass
import json
import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from datetime import datetime
from pathlib import Path

import pytest

from livekit import started, until
from minislurm.common.auth import Signer, load_key

pytestmark = pytest.mark.live
ROOT = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("MINISLURM_ARTIFACTS", ROOT / "out")) / "dashboard"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
ME = getpass.getuser()
ACCOUNTS = f"Account=research Fairshare=3\nAccount=vision Fairshare=1\nUser={ME} Account=research\nUser={ME} Account=vision\n"

# What the page shows, read from its DOM (the data- attributes the dashboard draws).
SNAPSHOT = """() => {
  const all = (sel) => Array.from(document.querySelectorAll(sel));
  return {
    renders: window.dashboardStats.renders, status: document.getElementById("status").textContent,
    nodes: Object.fromEntries(all(".node").map((n) => [n.dataset.node, {
      state: n.dataset.state,
      gpus: Array.from(n.querySelectorAll(".gpu")).map((g) => [g.dataset.state, g.dataset.job || null])}])),
    running: all("#gantt .running").map((r) => r.dataset.job),
    promised: all("#gantt .promise").map((r) => r.dataset.job),
    reservations: all("#gantt .reservation").map((r) => r.dataset.resv),
    queue: Object.fromEntries(all("#queue tbody tr").map((r) => [r.dataset.job, {
      reason: r.querySelector(".reason").textContent, start: r.querySelector(".start").dataset.start}])),
    shares: Object.fromEntries(all("[data-account]").map((s) => [s.dataset.account, Number(s.dataset.normShares)])),
    events: all("#events li[data-kind]").map((e) => ({kind: e.dataset.kind, state: e.dataset.state, text: e.textContent})),
  };
}"""


def _need_browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    missing = [why for ok, why in ((Path(CHROMIUM).exists(), "no chromium (apt-get install chromium)"),
                                   (sync_playwright is not None, "no playwright (pip install -r requirements.txt)"))
               if not ok]
    if missing:
        if os.environ.get("MINISLURM_REQUIRE_BROWSER") == "1":
            pytest.fail(", ".join(missing))
        pytest.skip(", ".join(missing))
    return sync_playwright


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """3 nodes x 4 GPUs, two accounts (research has 3 shares, vision 1), SlurmdTimeout 3 s."""
    root = tmp_path_factory.mktemp("dashboard")
    (root / "cluster").mkdir()
    (root / "cluster" / "accounts.conf").write_text(ACCOUNTS)
    with started(root, nodes=3, slurmd_timeout=3) as lv:
        yield lv


@pytest.fixture(scope="module")
def browser():
    sync_playwright = _need_browser()
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield chromium
        chromium.close()


class Page:
    """A tab on the dashboard that refuses every request leaving localhost and keeps the
    page's errors."""

    def __init__(self, browser, url: str):
        self.context = browser.new_context(viewport={"width": 1280, "height": 600})
        self.page = self.context.new_page()
        self.external, self.errors = [], []
        self.page.route("**/*", self._local_only)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.goto(url)

    def _local_only(self, route):
        host = re.match(r"\w+://([^/:]+)", route.request.url)
        if host is None or host.group(1) in ("127.0.0.1", "localhost"):
            return route.continue_()
        self.external.append(route.request.url)
        return route.abort()

    def seen(self) -> dict:
        return self.page.evaluate(SNAPSHOT)

    def shows(self, want, within: float = 10.0, what: str = "the page to show it") -> dict:
        """The page's snapshot once ``want(snapshot)`` holds for it."""
        got = {}

        def check():
            got["seen"] = self.seen()
            return want(got["seen"])
        try:
            until(check, within, what, step=0.05)
        except AssertionError:
            raise AssertionError(f"{what}; the page shows {json.dumps(got.get('seen'))[:3000]}") from None
        return got["seen"]

    def shot(self, name: str) -> Path:
        SHOTS.mkdir(parents=True, exist_ok=True)
        path = SHOTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def close(self):
        assert self.external == [], self.external
        self.context.close()


def dashboard_link(live) -> str:
    r = subprocess.run(["minislurm", "dashboard"], env=live.c.env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "Open the link above in a browser" in r.stderr
    (link,) = r.stdout.split()
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/dashboard#token=[\w.-]+", link), link
    return link


@pytest.fixture
def page(live, browser):
    p = Page(browser, dashboard_link(live))
    yield p
    p.close()


# -- what the commands say ------------------------------------------------------------------------
def sinfo(live) -> dict[str, str]:
    return dict(line.split() for line in live.run("sinfo", "-N", "-h", "-o", "%N %t").stdout.splitlines())


def gpu_owners(live) -> dict[str, list[str | None]]:
    """node -> per GPU the running job holding it (scontrol show job -d's GRES=gpu:N(IDX:...))."""
    owners = {node: [None] * 4 for node in sinfo(live)}
    for job_id in live.run("squeue", "-h", "-t", "R", "-o", "%i").stdout.split():
        shown = live.run("scontrol", "show", "job", "-d", job_id).stdout
        for node, idx in re.findall(r"^\s+Nodes=(\S+) .*GRES=gpu:\d+\(IDX:([\d,-]+)\)$", shown, re.M):
            for part in idx.split(","):
                a, _, b = part.partition("-")
                for g in range(int(a), int(b or a) + 1):
                    owners[node][g] = job_id
    return owners


def pending(live) -> dict[str, dict]:
    """squeue's pending jobs with their reasons, and squeue --start's expected starts (epoch)."""
    rows = {i: {"reason": r} for i, r in (line.split("|") for line in
                                          live.run("squeue", "-h", "-t", "PD", "-o", "%i|%r").stdout.splitlines())}
    for line in live.run("squeue", "--start", "-h", "-o", "%i|%S").stdout.splitlines():
        i, start = line.split("|")
        if i in rows:
            rows[i]["start"] = None if start == "N/A" else datetime.fromisoformat(start).timestamp()
    return rows


def account_shares(live) -> dict[str, float]:
    out = live.run("sshare", "-a", "-n", "-P", "-o", "Account,User,NormShares").stdout
    return {a.strip(): float(s) for a, u, s in (line.split("|") for line in out.splitlines())
            if not u and a.strip() != "root"}


def node(seen: dict, name: str) -> dict:
    """A node's block in the grid (none drawn yet: no state, no GPUs)."""
    return seen["nodes"].get(name, {"state": None, "gpus": []})


def grid_matches(seen: dict, states: dict, owners: dict) -> bool:
    """The grid's node states are sinfo's, and each GPU square names the job holding it."""
    return ({n: v["state"] for n, v in seen["nodes"].items()} == states
            and all([job for _, job in v["gpus"]] == owners[n] for n, v in seen["nodes"].items())
            and all((state == "alloc") == (job is not None) for v in seen["nodes"].values() for state, job in v["gpus"]))


def queue_matches(seen: dict, want: dict) -> bool:
    """The queue's jobs and reasons are squeue's, its expected starts squeue --start's (to the second)."""
    got = seen["queue"]

    def same_start(shown: str, start: float | None) -> bool:
        return not shown if start is None else bool(shown) and abs(float(shown) - start) < 1
    return set(got) == set(want) and all(got[i]["reason"] == w["reason"] and same_start(got[i]["start"], w.get("start"))
                                         for i, w in want.items())


# -- the tests --------------------------------------------------------------------------------------
def test_the_page_shows_what_the_commands_say(live, page):
    live.reset()
    a = live.sbatch("-J", "train", "-A", "research", "-N1", "--gres=gpu:3", "-t", "20", "-o", "/dev/null",
                    "--wrap", "sleep 300")
    b = live.sbatch("-J", "eval", "-A", "vision", "-N1", "--gres=gpu:2", "-t", "10", "-o", "/dev/null",
                    "--wrap", "sleep 300")
    live.wait(a, "RUNNING")
    live.wait(b, "RUNNING")
    big = live.sbatch("-J", "pretrain", "-A", "research", "-N3", "--gres=gpu:4", "-t", "30", "-o", "/dev/null",
                      "--wrap", "true")
    held = live.sbatch("-H", "-J", "later", "-A", "vision", "-o", "/dev/null", "--wrap", "true")
    r = live.run("scontrol", "create", "reservation", "ReservationName=exam", "Nodes=gpu03", "StartTime=now+2hours",
                 "Duration=60", f"Users={ME}")
    assert r.returncode == 0, r.stderr
    until(lambda: pending(live).get(str(big), {}).get("start"), 15, "the backfill plan to promise a start")

    states, owners, queue, shares = sinfo(live), gpu_owners(live), pending(live), account_shares(live)
    assert sum(g is not None for gpus in owners.values() for g in gpus) == 5 and set(queue) == {str(big), str(held)}
    seen = page.shows(lambda s: grid_matches(s, states, owners) and queue_matches(s, queue), what="grid and queue")
    assert seen["queue"][str(held)]["reason"] == "JobHeldUser" and not seen["queue"][str(held)]["start"]
    # The Gantt: the two running jobs until their limits, the promise of the waiting one.
    assert sorted(set(seen["running"])) == sorted([str(a), str(b)]) and set(seen["promised"]) == {str(big)}
    assert seen["reservations"] == ["exam"]
    # Fair share: sshare's accounts and their normalised shares.
    assert {"research", "vision"} <= shares.keys() and seen["shares"].keys() == shares.keys()
    assert shares["research"] == pytest.approx(3 * shares["vision"])
    assert all(abs(seen["shares"][k] - v) < 1e-6 for k, v in shares.items()), (seen["shares"], shares)
    assert seen["status"].startswith("updated ") and page.errors == []
    # A requeue is an event: the run sacct -D records REQUEUED.
    ran_on = live.job(b)["nodes"]
    assert live.run("scontrol", "requeue", str(b)).returncode == 0
    page.shows(lambda s: any(e["kind"] == "job" and e["state"] == "REQUEUED" and f"job {b} (eval, {ME}) requeued "
                             f"from {ran_on}" in e["text"] for e in s["events"]), what="the requeue among the events")
    runs = live.run("sacct", "-j", str(b), "-D", "-X", "-n", "-P", "-o", "State,NodeList").stdout.splitlines()
    assert runs[0] == f"REQUEUED|{ran_on}"  # the event is sacct's record of the requeued run
    page.page.hover(f'#grid .gpu[data-job="{a}"]')  # what a square is, in the line at the bottom
    assert page.page.inner_text("#tip").endswith(f"GPU 0: job {a} (train) of {ME}")
    shot = page.shot("dashboard")
    assert shot.stat().st_size > 20_000
    if os.environ.get("MINISLURM_BOOK_IMAGES") == "1":
        shutil.copyfile(shot, ROOT / "book" / "images" / "dashboard.png")
    live.run("scontrol", "delete", "ReservationName=exam")


def test_a_drained_node_shows_within_two_seconds(live, page):
    live.reset()
    page.shows(lambda s: node(s, "gpu03")["state"] == "idle", what="gpu03 idle")
    r = live.run("scontrol", "update", "NodeName=gpu03", "State=DRAIN", "Reason=cooling fan")
    assert r.returncode == 0, r.stderr
    drained = time.monotonic()
    seen = page.shows(lambda s: node(s, "gpu03")["state"] == "drain", 2.0, "gpu03 drained within 2 s")
    took = time.monotonic() - drained
    assert sinfo(live)["gpu03"] == "drain"
    assert {g[0] for g in seen["nodes"]["gpu03"]["gpus"]} == {"drained"}
    seen = page.shows(lambda s: any(e["kind"] == "node" and "gpu03 drain: cooling fan" in e["text"] for e in s["events"]),
                      what="the drain among the events")
    assert live.run("sinfo", "-R", "-h", "-o", "%E|%N").stdout == "cooling fan|gpu03\n"  # what the event says
    page.shot("drained")
    live.run("scontrol", "update", "NodeName=gpu03", "State=RESUME")
    page.shows(lambda s: node(s, "gpu03")["state"] == "idle", 2.0, "gpu03 back within 2 s")
    print(f"a drained node showed on the page {took:.2f} s after scontrol returned")


def test_a_crashed_node_shows_down_and_its_job_requeued(live, page):
    live.reset()
    job = live.sbatch("-J", "resumable", "-N1", "-w", "gpu02", "--gres=gpu:4", "-t", "20", "-o", "/dev/null",
                      "--wrap", "sleep 300")
    live.wait(job, "RUNNING")
    page.shows(lambda s: [g[1] for g in node(s, "gpu02")["gpus"]] == [str(job)] * 4, what="the job on gpu02")
    live.c.kill_node("gpu02")
    until(lambda: sinfo(live)["gpu02"] == "down*", 15, "gpu02 DOWN")
    seen = page.shows(lambda s: node(s, "gpu02")["state"] == "down*" and any(
        e["kind"] == "job" and e["state"] == "NODE_FAIL" and f"job {job} " in e["text"] for e in s["events"]),
        what="gpu02 down* and the lost run among the events")
    assert {g[0] for g in seen["nodes"]["gpu02"]["gpus"]} == {"down"}
    assert any(e["kind"] == "node" and "gpu02 down: Not responding" in e["text"] for e in seen["events"])
    runs = live.run("sacct", "-j", str(job), "-D", "-X", "-n", "-P", "-o", "State,NodeList").stdout.splitlines()
    assert runs[0] == "NODE_FAIL|gpu02"  # the event is sacct's record of the lost run
    assert live.job(job)["restart_count"] == 1
    page.shot("node-down")
    live.c.start_node("gpu02")


def test_without_a_token_nothing_is_shown(live, browser):
    link = dashboard_link(live)
    base = link.split("/dashboard#")[0]
    for headers in ({}, {"Authorization": "Bearer not-a-token"}):
        request = urllib.request.Request(f"{base}/api/v1/dashboard/view", headers=headers)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 401
        assert json.loads(refused.value.read())["error"].startswith("Invalid authentication credential")
    with urllib.request.urlopen(f"{base}/dashboard", timeout=10) as r:  # the page itself holds no data
        assert "default-src 'self'" in r.headers["Content-Security-Policy"] and b"<svg id=\"gantt\"" in r.read()
    bare = Page(browser, f"{base}/dashboard")
    seen = bare.shows(lambda s: "No token" in s["status"], what="the page to ask for a token")
    assert seen["nodes"] == {} and seen["renders"] == 0
    bare.close()
    # A token that has expired is refused, and the page says what to do.
    expired = Signer(load_key(live.c.key_path)).user_token(ME, 1)
    time.sleep(2)
    old = Page(browser, f"{base}/dashboard#token={expired}")
    seen = old.shows(lambda s: "Expired JWT token" in s["status"], what="the page to say the token expired")
    assert "minislurm dashboard" in seen["status"] and seen["nodes"] == {}
    old.close()
