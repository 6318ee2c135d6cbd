"""Advance reservations through scontrol: create, show, use, refuse, delete."""

from __future__ import annotations

import getpass

import pytest
from livekit import until

pytestmark = pytest.mark.live


def test_reservation_life_cycle(live):
    live.reset()
    me = getpass.getuser()
    r = live.run("scontrol", "create", "reservation", "ReservationName=longrun", "Nodes=gpu02",
                 "StartTime=now", "Duration=60", f"Users={me}")
    assert (r.returncode, r.stdout) == (0, "Reservation created: longrun\n"), r.stderr
    shown = live.run("scontrol", "show", "reservation", "longrun").stdout
    assert shown.startswith("ReservationName=longrun StartTime=")
    assert "Duration=01:00:00" in shown and "Nodes=gpu02 NodeCnt=1" in shown
    assert f"Users={me}" in shown and "State=ACTIVE" in shown

    inside = live.sbatch("--reservation=longrun", "-o", "/dev/null", "--wrap", "sleep 30")
    assert live.wait(inside, "RUNNING")["nodes"] == "gpu02"
    wide = live.sbatch("-N2", "-o", "/dev/null", "--wrap", "true")
    until(lambda: live.job(wide)["reason"] == "ReqNodeNotAvail, May be reserved for other job", 10,
          "the wide job to wait for the reservation")

    r = live.run("scontrol", "create", "reservation", "ReservationName=longrun", "Nodes=gpu01",
                 "StartTime=now", "Duration=10", f"Users={me}")
    assert r.returncode == 1 and r.stderr == "Error creating the reservation: Duplicate reservation name\n"
    r = live.run("sbatch", "--reservation=nosuch", "--wrap", "true")
    assert r.returncode == 1
    assert r.stderr == "sbatch: error: Batch job submission failed: Requested reservation is invalid\n"

    # In use by a running job: refused, as in Slurm 22.05 (minislurm used to delete it).
    r = live.run("scontrol", "delete", "ReservationName=longrun")
    assert (r.returncode, r.stderr) == (1, "delete_reservation ReservationName=longrun: Requested reservation is in use\n")
    live.run("scancel", str(inside))
    live.wait(inside)
    assert live.run("scontrol", "delete", "reservation", "longrun").returncode == 0
    assert live.run("scontrol", "show", "reservation").stdout == "No reservations in the system\n"
    assert live.wait(wide, "COMPLETED", timeout=30)["state"] == "COMPLETED"


def test_only_operators_create_reservations(live):
    token = live.run("scontrol", "token", "username=alice").stdout.strip().split("=", 1)[1]
    r = live.run("scontrol", "create", "reservation", "ReservationName=mine", "Nodes=gpu01",
                 "StartTime=now", "Duration=10", "Users=alice", env={"SLURM_JWT": token})
    assert r.returncode == 1 and r.stderr == "Error creating the reservation: Invalid user id\n"  # Slurm 22.05's words
