"""sdiag on a live cluster: what its counters count (its layout: the twin session "sdiag")."""

from __future__ import annotations

import re


def numbers(text: str) -> dict[str, int]:
    """``Jobs submitted: 3`` -> {"Jobs submitted": 3} (a later line of the same name wins)."""
    return {k.strip(): int(v) for k, v in re.findall(r"^\t?([A-Za-z][^:\n]*?):\s+(\d+)$", text, re.M)}


def rpc_rows(text: str) -> list[tuple[str, int, int, int]]:
    """(name, id, count, total time) of each line of the RPCs by message type."""
    return [(name, int(i), int(c), int(t)) for name, i, c, t in
            re.findall(r"^\t([A-Z_]+) +\( *(\d+)\) count:(\d+) +ave_time:\d+ +total_time:(\d+)$", text, re.M)]


def test_jobs_cycles_and_rpcs_are_counted_then_reset(live):
    assert live.run("sdiag", "-r").stdout == "Reset scheduling statistics\n"
    ok = live.sbatch("-o", "/dev/null", "--wrap", "true")
    bad = live.sbatch("-o", "/dev/null", "--wrap", "exit 3")
    held = live.sbatch("-H", "-o", "/dev/null", "--wrap", "true")
    assert live.wait(ok)["state"] == "COMPLETED" and live.wait(bad)["state"] == "FAILED"
    live.run("scancel", str(held))
    live.wait(held)
    out = live.run("sdiag").stdout
    n = numbers(out)
    # exit 3 is "completed" to sdiag, as on Slurm 22.05; the cancelled pending job never started
    assert [n[f"Jobs {k}"] for k in ("submitted", "started", "completed", "canceled", "failed")] == [3, 2, 2, 1, 0]
    main = out.split("Main schedule statistics")[1].split("Backfilling")[0]
    assert numbers(main)["Total cycles"] >= 2 and numbers(main)["Max cycle"] > 0
    rpcs = {name: count for name, _, count, _ in rpc_rows(out)}
    assert rpcs["REQUEST_SUBMIT_BATCH_JOB"] == 3 and rpcs["REQUEST_KILL_JOB"] == 1
    assert rpcs["REQUEST_STATS_INFO"] == 1  # the reset, counted once answered; this call not yet
    assert re.search(r"^\troot +\( +0\) count:\d+", out, re.M)
    by_id = rpc_rows(live.run("sdiag", "-i").stdout)
    assert [i for _, i, _, _ in by_id] == sorted(i for _, i, _, _ in by_id)
    by_time = rpc_rows(live.run("sdiag", "-t").stdout)
    assert [t for *_, t in by_time] == sorted((t for *_, t in by_time), reverse=True)
    live.run("sdiag", "-r")
    assert numbers(live.run("sdiag").stdout)["Jobs submitted"] == 0


def test_only_an_operator_resets_the_counters(live):
    token = live.run("scontrol", "token", "username=alice").stdout.strip().split("=", 1)[1]
    r = live.run("sdiag", "-r", env={"SLURM_JWT": token})
    assert (r.returncode, r.stdout, r.stderr) == (255, "", "slurm_reset_statistics: Access/permission denied\n")
    assert live.run("sdiag", env={"SLURM_JWT": token}).returncode == 0  # anyone may look
