"""The controller's OpenMetrics, scraped by a real Prometheus (Debian's ``prometheus``, started
here on loopback): the series Slurm 25.11's metrics plugin names, with the cluster's numbers.

Without a ``prometheus`` binary the test is skipped, unless MINISLURM_REQUIRE_PROMETHEUS=1 (as
.ci/run sets, having installed it) makes that a failure."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

from minislurm.ctld.metrics import ENDPOINTS


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _controller_port(live) -> int:
    line = next(x for x in live.c.conf_path.read_text().splitlines() if x.startswith("SlurmctldPort="))
    return int(line.split("=", 1)[1])


@pytest.fixture
def prometheus(live, tmp_path):
    binary = shutil.which("prometheus")
    if binary is None:
        if os.environ.get("MINISLURM_REQUIRE_PROMETHEUS") == "1":
            pytest.fail("no prometheus binary (apt-get install prometheus)")
        pytest.skip("no prometheus binary (apt-get install prometheus)")
    target = f"127.0.0.1:{_controller_port(live)}"
    jobs = "".join(f"""
  - job_name: "{e}"
    metrics_path: /metrics/{e}
    static_configs:
      - targets: ["{target}"]
""" for e in ENDPOINTS)
    (tmp_path / "prometheus.yml").write_text(f"global:\n  scrape_interval: 1s\nscrape_configs:{jobs}")
    port = _free_port()
    proc = subprocess.Popen([binary, f"--config.file={tmp_path / 'prometheus.yml'}",
                             f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=open(tmp_path / "prometheus.log", "wb"))
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _get(url: str):
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


def query(base: str, expr: str) -> dict[str, float]:
    """The instant vector ``expr``: each series' labels (without job and instance) -> value."""
    data = _get(f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))["data"]["result"]
    out = {}
    for row in data:
        labels = {k: v for k, v in row["metric"].items() if k not in ("__name__", "job", "instance")}
        out[",".join(f"{k}={v}" for k, v in sorted(labels.items()))] = float(row["value"][1])
    return out


def wait_for(base: str, expr: str, want: dict[str, float], within: float = 60.0) -> dict[str, float]:
    deadline = time.time() + within
    while True:
        try:
            got = query(base, expr)
        except OSError:
            got = None
        if got == want or time.time() > deadline:
            return got
        time.sleep(0.5)


def test_prometheus_scrapes_every_endpoint_and_sees_the_cluster(live, prometheus):
    job = live.sbatch("-N1", "--gres=gpu:3", "-o", "/dev/null", "--wrap", "sleep 60")
    live.wait(job, "RUNNING")
    held = live.sbatch("-H", "-o", "/dev/null", "--wrap", "true")
    deadline, targets = time.time() + 60, []
    while time.time() < deadline and (len(targets) < len(ENDPOINTS) or any(t["health"] != "up" for t in targets)):
        time.sleep(0.5)
        try:
            targets = _get(f"{prometheus}/api/v1/targets")["data"]["activeTargets"]
        except OSError:  # not listening yet
            pass
    assert sorted(t["labels"]["job"] for t in targets) == sorted(ENDPOINTS)
    assert all(t["health"] == "up" for t in targets), [(t["labels"]["job"], t["lastError"]) for t in targets]
    assert wait_for(prometheus, "slurm_jobs_running", {"": 1}) == {"": 1}
    assert wait_for(prometheus, "slurm_jobs_pending", {"": 1}) == {"": 1}
    assert wait_for(prometheus, "slurm_jobs_hold", {"": 1}) == {"": 1}
    assert wait_for(prometheus, "slurm_jobs_gpus_alloc", {"": 3}) == {"": 3}
    assert wait_for(prometheus, "sum(slurm_node_gpus_alloc)", {"": 3}) == {"": 3}
    assert wait_for(prometheus, "slurm_partition_jobs_gpus_alloc", {"partition=gpu": 3}) == {"partition=gpu": 3}
    assert wait_for(prometheus, "slurm_partition_gpus_idle", {"partition=gpu": 5}) == {"partition=gpu": 5}
    assert wait_for(prometheus, "slurm_nodes_mixed", {"": 1}) == {"": 1}
    assert wait_for(prometheus, "slurm_nodes_idle", {"": 1}) == {"": 1}
    user = query(prometheus, "slurm_user_jobs_running")
    assert list(user.values()) == [1.0] and list(user)[0].startswith("username=")
    assert query(prometheus, "slurm_schedule_cycle_cnt")[""] >= 1
    assert query(prometheus, "slurm_sdiag_jobs_submitted")[""] >= 2
    live.run("scancel", str(job), str(held))
    live.wait(job)
    assert wait_for(prometheus, "slurm_jobs_gpus_alloc", {"": 0}) == {"": 0}
    assert wait_for(prometheus, "slurm_jobs_cancelled", {"": 2}) == {"": 2}
