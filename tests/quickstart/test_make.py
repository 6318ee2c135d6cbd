"""The README's two commands as a newcomer meets them: ``make test`` runs every part and says how
each went, so a failure in the unit tests does not hide whether the labs and the book work."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def make(*args: str, extra: Path) -> subprocess.CompletedProcess:
    # -o: the virtualenv counts as made, whatever the timestamps; -f extra adds stand-in parts.
    return subprocess.run(["make", "--no-print-directory", "-o", ".venv/.installed", "-f", "Makefile",
                           "-f", str(extra), *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_every_part_runs_and_a_failure_is_reported_at_the_end(tmp_path):
    parts = tmp_path / "parts.mk"
    parts.write_text("test-first: ; @echo first ran; exit 3\n"
                     "test-second: ; @echo second ran\n")
    r = make("test", "TEST_PARTS=first second", extra=parts)
    assert r.returncode != 0
    assert "first ran" in r.stdout and "second ran" in r.stdout  # the failure did not stop the run
    summary = r.stdout.split("== make test: every part ran ==", 1)[1]
    assert "test-first  FAILED" in summary and "test-second passed" in summary
    assert "make test: failed: first" in summary


def test_all_parts_passing_exits_zero(tmp_path):
    parts = tmp_path / "parts.mk"
    parts.write_text("test-first: ; @true\ntest-second: ; @true\n")
    r = make("test", "TEST_PARTS=first second", extra=parts)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "failed" not in r.stdout


def test_the_default_parts_are_unit_labs_and_book():
    r = subprocess.run(["make", "-n", "-p", "-o", ".venv/.installed", "test"], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert "\nTEST_PARTS = unit labs book\n" in r.stdout  # make's database, as -p prints it


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_make_labs_serves_the_student_notebooks_as_root_or_not(tmp_path):
    """``make labs`` starts JupyterLab on dist/student; as root Jupyter refuses unless told
    --allow-root, which the Makefile adds (a learner in a container or lab VM is often root)."""
    import json
    import os
    import signal
    import time
    import urllib.request

    import nbformat

    (tmp_path / "student").mkdir()
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")]),
                   tmp_path / "student" / "01-first.ipynb")
    port = free_port()
    args = f"--no-browser --port={port} --ServerApp.port_retries=0 --IdentityProvider.token=lab-test"
    proc = subprocess.Popen(["make", "--no-print-directory", "-o", ".venv/.installed", "labs",
                             f"LABS_DIR={tmp_path}", f"JUPYTER_ARGS={args}"], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline, listing = time.monotonic() + 120, None
        while listing is None and proc.poll() is None and time.monotonic() < deadline:
            try:
                url = f"http://127.0.0.1:{port}/api/contents?token=lab-test"
                listing = json.load(urllib.request.urlopen(url, timeout=5))
            except OSError:
                time.sleep(0.5)
        assert listing is not None, f"JupyterLab did not answer (exit {proc.poll()}):\n{proc.stdout.read() if proc.poll() is not None else ''}"
        assert [f["name"] for f in listing["content"]] == ["01-first.ipynb"]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
