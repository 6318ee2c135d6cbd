"""``minislurm grade run --docker always`` in the grading image (``make grader-image``): the same
grades as the local path, every lab (some start a live cluster), the whole-submission limit, and a
submission that tries the network and writes outside /tmp.

Skipped unless a Docker engine answers and the image exists."""

from __future__ import annotations

import subprocess

import pytest

from gradekit import LABS, minislurm, processes, worked_answers, write_submission
from minislurm.grade.sandbox import docker_ready
from test_assign import POINTS
from test_run import EXAMPLE_GRADES, EXAMPLE_REPORTS, LAB, RIGHT, read_csv, reports, write_examples

IMAGE = "minislurm-grader"
pytestmark = pytest.mark.skipif(not docker_ready(IMAGE),
                                reason=f"no Docker engine answers or no image {IMAGE!r} (make grader-image)")

# Prepended to a right answer: the answer is only defined when every escape failed.
ESCAPES = '''import os, socket, sysconfig, urllib.request
_escaped = []
for _name, _try in (("socket 1.1.1.1:53", lambda: socket.create_connection(("1.1.1.1", 53), timeout=3)),
                    ("http://deb.debian.org", lambda: urllib.request.urlopen("http://deb.debian.org/", timeout=3))):
    try:
        _try().close()
        _escaped.append(_name)
    except OSError:
        pass
for _path in ("/escape", "/etc/escape", "/opt/minislurm/escape", sysconfig.get_paths()["purelib"] + "/sitecustomize.py",
              "/grade/in/escape", "/grade/in/submission.ipynb"):
    try:
        with open(_path, "a") as _f:
            _f.write("# escaped\\n")
        _escaped.append(_path)
    except OSError:
        pass
with open("/tmp/allowed", "w") as _f:  # the one place that must stay writable
    _f.write("ok")
if _escaped:
    raise RuntimeError(f"escaped the sandbox: {_escaped}")
'''


def grade(*args: str, status: int = 0) -> subprocess.CompletedProcess:
    """``grade run ARGS``, which must exit with ``status`` (3: some questions not graded, timed out)."""
    proc = minislurm("grade", "run", *args, timeout=900)  # every lab in 1-CPU containers, some start clusters
    assert proc.returncode == status, proc.stdout
    return proc


def docker_clients() -> list[str]:
    """``docker run`` commands of grading containers still running here."""
    def grading(_pid: str, argv: list[bytes]) -> bool:
        return argv[:2] == [b"docker", b"run"] and any(a.startswith(b"minislurm-grade-") for a in argv)
    return [b" ".join(argv).decode(errors="replace") for argv in processes(grading)]


def containers() -> list[str]:
    """Grading containers still there, running or not."""
    return subprocess.run(["docker", "ps", "-a", "-q", "--filter", "name=minislurm-grade-"],
                          capture_output=True, text=True, check=True).stdout.split()


def test_docker_gives_exactly_the_local_grades_and_notes(dist, tmp_path):
    """The examples' grades and notes, exactly as test_run's local run has them."""
    out, _ = dist
    subs = write_examples(out / "student" / f"{LAB}.ipynb", tmp_path / "subs")
    docker = grade(str(subs), "--autograder", str(out / "autograder" / f"{LAB}-autograder.zip"), "--timeout", "5",
                   "--jobs", "2", "--docker", "always", "--out", str(tmp_path / "docker.csv"), status=3)

    assert f"grading 5 submissions in Docker image '{IMAGE}': no network" in docker.stdout
    assert read_csv(tmp_path / "docker.csv") == EXAMPLE_GRADES  # bob's exercise 2: the hidden check ran
    assert reports(docker.stdout) == EXAMPLE_REPORTS, "\n".join(reports(docker.stdout))
    assert "2 graded, 1 failed, 2 not graded (timed out)" in docker.stdout  # carol's and erin's loops
    assert docker_clients() == [] and containers() == []


def test_every_lab_worked_gets_full_marks_in_docker(dist, tmp_path):
    """As locally (``grade assign`` checks that); labs 1-4 and 7 start a minislurm cluster
    (controller, node agents, batch jobs) inside the container."""
    out, _ = dist
    subs = tmp_path / "subs"
    for lab in LABS:
        write_submission(out / "student" / f"{lab}.ipynb", subs / "grace" / f"{lab}.ipynb", worked_answers(lab))

    grade(str(subs), "--dist", str(out), "--jobs", "2", "--docker", "always", "--out", str(tmp_path / "g.csv"))

    assert read_csv(tmp_path / "g.csv")[1:] == [
        ["grace", f"{lab}/{q}", str(p), str(p), "graded"] for lab in LABS for q, p in POINTS[lab].items()]
    assert containers() == []


def test_network_and_writes_outside_tmp_fail_in_the_sandbox_and_grading_completes(dist, tmp_path):
    out, _ = dist
    subs = tmp_path / "subs"
    write_submission(out / "student" / f"{LAB}.ipynb", subs / "mallory.ipynb", [ESCAPES + RIGHT[0], *RIGHT[1:]])

    proc = grade(str(subs), "--autograder", str(out / "autograder" / f"{LAB}-autograder.zip"), "--timeout", "30",
                 "--docker", "always", "--out", str(tmp_path / "g.csv"))

    assert "escaped" not in proc.stdout, proc.stdout  # the note says what got through
    assert read_csv(tmp_path / "g.csv")[1:] == [["mallory", f"exercise-{n}", "2", "2", "graded"] for n in (1, 2, 3, 4)]
    assert "1 graded, 0 failed, 0 not graded" in proc.stdout
    assert containers() == []


def test_a_submission_past_the_whole_limit_is_killed_with_its_container_and_not_graded(dist, tmp_path):
    out, _ = dist
    stubborn = "import time\nwhile True:\n    try:\n        time.sleep(30)\n    except KeyboardInterrupt:\n        pass"
    subs = tmp_path / "subs"
    write_submission(out / "student" / f"{LAB}.ipynb", subs / "frank.ipynb", [RIGHT[0], stubborn, RIGHT[2], None])

    proc = grade(str(subs), "--autograder", str(out / "autograder" / f"{LAB}-autograder.zip"), "--timeout", "2",
                 "--submission-timeout", "8", "--docker", "always", "--out", str(tmp_path / "g.csv"), status=3)

    assert "note   frank (frank.ipynb) submission: timed out: grading took longer than 8 s as a whole" in proc.stdout
    assert read_csv(tmp_path / "g.csv")[1:] == [["frank", f"exercise-{n}", "", "2", "not graded (timed out after 8 s; rerun)"]
                                                for n in (1, 2, 3, 4)]
    assert docker_clients() == [] and containers() == []
