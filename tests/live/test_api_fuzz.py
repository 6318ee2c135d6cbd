"""The controller's API fuzzed from its own ``openapi.json`` (schemathesis), against a real controller.

The schema the controller publishes is the one it enforces, so schemathesis generates both
valid requests and, from the same description, invalid ones (wrong types, out-of-range and
oversized values, missing and unknown fields, broken JSON, odd headers and methods).  The bar:
no answer is a 5xx, and afterwards squeue/sacct/scontrol still work for everyone, the controller
log holds no request failure, and a good job still gets scheduled and runs.

The node agents are stopped while the fuzzer runs, so none of the thousands of generated jobs
(random scripts, as root) can start; they are cancelled before the agents come back.  Requests
go out as an operator, as a plain user, and (agent routes only) as a node.

``MINISLURM_FUZZ_EXAMPLES`` sets the examples per operation (default 2: about half a minute; the
submission, job update and reservation routes get ten times as many; above 5 every run also does
the coverage phase, and users fuzz those routes too).  ``MINISLURM_FUZZ_REPORT=<file>`` appends
the figures as a JSON line.
"""

from __future__ import annotations

import base64
import glob
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from minislurm.common.auth import Signer, load_key

pytestmark = pytest.mark.live
EXAMPLES = int(os.environ.get("MINISLURM_FUZZ_EXAMPLES", "2"))
SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")


def _runs(live) -> list[tuple[str, str, list[str], int]]:
    """(who, token, which operations and phases, examples per operation) for each fuzzing run.

    Every operation gets schemathesis' coverage phase (each field's boundary and wrong-type
    values) as an operator; the other runs fuzz (random valid and invalid requests).  With more
    than the default examples every run does both."""
    operator = live.api.token
    user = live.api.call("POST", "/token", {"username": "fuzzer"})["token"]
    node = Signer(load_key(live.c.dir / "jwt_hs256.key")).node_token("gpu01")
    full = ["--phases", "examples,coverage,fuzzing"]
    rest = full if EXAMPLES > 5 else ["--phases", "fuzzing"]
    writes = ["--include-operation-id", "submit", "--include-operation-id", "create_reservation",
              "--include-operation-id", "update_reservation", "--include-operation-id", "update_job"]
    runs = [("operator", operator, full, EXAMPLES), ("user", user, rest, EXAMPLES),
            ("node", node, [*full, "--include-path-regex", "/agents/"], EXAMPLES),
            ("operator", operator, [*rest, *writes], 10 * EXAMPLES)]
    return runs + [("user", user, [*full, *writes], 10 * EXAMPLES)] if EXAMPLES > 5 else runs


def _fuzz(base: str, token: str, only: list[str], examples: int, report: Path) -> tuple[int, list]:
    """Run schemathesis; return (requests sent, [(operation, status, body)] of the 5xx answers)."""
    cmd = [str(SCHEMATHESIS), "run", f"{base}/api/v1/openapi.json", "-H", f"Authorization: Bearer {token}",
           "--checks", "not_a_server_error",
           "--max-examples", str(examples), "--request-timeout", "30", "--workers", "1",
           "--exclude-path-regex", "/wait$",  # a long poll: covered with a short timeout below
           "--report", "ndjson", "--report-dir", str(report), *only]
    report.mkdir(parents=True)
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, cwd=report)  # its cache goes there
    sent, errors = 0, []
    for path in glob.glob(str(report / "*.ndjson")):
        for line in open(path):
            scenario = json.loads(line).get("ScenarioFinished")
            for item in (scenario or {}).get("recorder", {}).get("interactions", {}).values():
                sent += 1
                response = item.get("response") or {}
                if response.get("status_code", 0) >= 500:
                    body = base64.b64decode(response.get("content", {}).get("$base64", "")).decode(errors="replace")
                    errors.append((scenario["recorder"]["label"], response["status_code"], body[:200]))
    assert sent, run.stdout[-3000:] + run.stderr[-3000:]
    assert run.returncode == 0 or errors, run.stdout[-3000:]  # it failed for another reason: say so
    return sent, errors


def test_no_server_errors_under_fuzzing(live, tmp_path):
    for name in [p.removeprefix("slurmd-") for p in live.c.procs if p.startswith("slurmd-")]:
        live.c.kill_node(name)
    host, port = live.api.address
    base = f"http://{host}:{port}"
    started, sent, errors = time.time(), 0, []
    for i, (who, token, only, examples) in enumerate(_runs(live)):
        t0 = time.time()
        n, found = _fuzz(base, token, only, examples, tmp_path / f"run{i}")
        print(f"\n{who} {only} {examples}: {n} requests, {len(found)} 5xx, {time.time() - t0:.0f} s")
        sent += n
        errors += [(who, *e) for e in found]
    for job_id in range(1, 40):  # the long poll, which the fuzzer skips: bounded and typed
        status = _status(base, live.api.token, f"/jobs/{job_id}/wait?until=end&timeout=0.01")
        assert status in (200, 404), (job_id, status)
    figures = {"examples": EXAMPLES, "requests": sent, "server_errors": len(errors),
               "seconds": round(time.time() - started)}
    print(f"\nAPI fuzzing: {figures}")
    if os.environ.get("MINISLURM_FUZZ_REPORT"):
        with open(os.environ["MINISLURM_FUZZ_REPORT"], "a") as f:
            f.write(json.dumps(figures) + "\n")
    assert not errors, errors[:20]

    log = (live.c.dir / "log" / "slurmctld.log").read_text()
    for sign in (" failed\nTraceback", "Exception in callback", "Task exception was never retrieved"):
        assert sign not in log, log[log.index(sign) - 200:][:5000]  # a handler or a loop of the controller raised
    for user in ("root", "fuzzer"):  # every list still loads, for an operator and for a user
        env = {} if user == "root" else {"SLURM_JWT": live.api.call("POST", "/token", {"username": user})["token"]}
        for argv in (("squeue", "-a"), ("sacct", "-a", "-X"), ("scontrol", "show", "job"),
                     ("scontrol", "show", "reservation"), ("sinfo",), ("sprio",), ("sshare",)):
            r = live.run(*argv, env=env)
            assert r.returncode == 0, (user, argv, r.stderr)
    for resv in live.api.call("GET", "/reservations")["reservations"]:
        live.api.call("DELETE", f"/reservations/{resv['name']}")
    live.reset(timeout=60)  # cancels every fuzzed job first, then boots the agents again
    job_id = live.sbatch("-o", "/dev/null", "--wrap", "true")
    assert live.wait(job_id, timeout=60)["state"] == "COMPLETED"


def _status(base: str, token: str, path: str) -> int:
    import http.client
    host, port = base.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("GET", "/api/v1" + path, headers={"Authorization": f"Bearer {token}"})
    return conn.getresponse().status
