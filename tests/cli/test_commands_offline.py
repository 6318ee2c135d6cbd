"""Commands that must refuse bad input before they contact any controller (so no cluster here).

Each expected text and exit code is what Slurm 22.05 printed on the real-Slurm twin, or, where
Slurm has no answer but a crash, minislurm's own refusal (see the modules' docstrings).
"""

import time

import pytest

from minislurm.cli import sbatch, squeue

DOS = ("sbatch: error: Batch script contains DOS line breaks (\\r\\n)\n"
       "sbatch: error: instead of expected UNIX line breaks (\\n).\n")


@pytest.fixture(autouse=True)
def no_cluster(monkeypatch, tmp_path):
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "no-such-slurm.conf"))
    monkeypatch.chdir(tmp_path)


def test_sbatch_refuses_a_script_file_with_crlf_line_ends(tmp_path, capsys):
    """Reading the file must not turn \\r\\n into \\n (Python's default newline handling did, so
    a DOS script passed the check that the same script on stdin failed)."""
    script = tmp_path / "crlf.sh"
    script.write_bytes(b"#!/bin/sh\r\necho hi\r\n")
    assert sbatch.main([str(script)]) == 1
    out, err = capsys.readouterr()
    assert (out, err) == ("", DOS)
    script.write_bytes(b"#!/bin/sh\necho hi\r\n")  # one CRLF anywhere is enough
    assert sbatch.main([str(script)]) == 1
    assert capsys.readouterr().err == DOS


def test_squeue_refuses_a_huge_width_at_once(capsys):
    """Slurm 22.05 crashes (SIGSEGV) on ``squeue -o %999999999i``; minislurm wrote gigabytes
    for a minute.  Now: an error before the controller is asked, exit 1."""
    for fmt in (["-o", "%999999999i"], ["-o", "%.999999999j"], ["-O", "name:999999999"]):
        start = time.monotonic()
        assert squeue.main(fmt) == 1
        assert time.monotonic() - start < 1
        out, err = capsys.readouterr()
        assert out == "" and err == "squeue: error: field width 999999999 is too large (at most 1024)\n"


def test_squeue_reports_a_bad_letter_without_a_traceback(capsys):
    assert squeue.main(["-o", "%i %k"]) == 1
    assert capsys.readouterr().err == "squeue: error: Invalid job format specification: k\n"
