"""Commands that must refuse bad input before they contact any controller (so no cluster here).

Each expected text and exit code is what Slurm 22.05 printed on the real-Slurm twin, or, where
Slurm has no answer but a crash, minislurm's own refusal (see the modules' docstrings).
"""

import os
import resource
import subprocess
import sys
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


TOO_LONG = "sbatch: error: Batch job submission failed: Pathname of a file, directory or other parameter too long\n"


def _sbatch_in_a_box(argv: list[str], conf, stdin=None) -> subprocess.CompletedProcess:
    """sbatch in its own process with 1 GB of address space: reading all of /dev/zero cannot
    pass for a refusal (it dies of MemoryError, or of the time limit)."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    env.pop("SLURM_JWT", None)
    return subprocess.run([sys.executable, "-c", "import sys; from minislurm.cli import sbatch; "
                           "sys.exit(sbatch.main(sys.argv[1:]))", *argv], stdin=stdin, env=env,
                          capture_output=True, text=True, timeout=120, preexec_fn=limit)


def test_sbatch_reads_no_more_than_max_script_size(tmp_path):
    """``sbatch /dev/zero`` read without end (23 GB, then the kernel killed it): now sbatch reads
    max_script_size + 1 bytes (SchedulerParameters, 4 MB unless set) and answers what
    slurmctld answers a larger script (ESLURM_PATHNAME_TOO_LONG), exit 1."""
    conf = tmp_path / "no-such-slurm.conf"
    r = _sbatch_in_a_box(["/dev/zero"], conf)
    assert (r.returncode, r.stdout, r.stderr) == (1, "", TOO_LONG)
    with open("/dev/zero", "rb") as zero:
        r = _sbatch_in_a_box([], conf, stdin=zero)
    assert (r.returncode, r.stdout, r.stderr) == (1, "", TOO_LONG)
    conf = tmp_path / "slurm.conf"
    conf.write_text("SlurmctldHost=localhost\nSlurmctldPort=9\nMessageTimeout=1\n"
                    "SchedulerParameters=bf_continue,max_script_size=100\n")
    big, fits = tmp_path / "big.sh", tmp_path / "fits.sh"
    big.write_text("#!/bin/sh\n" + "#" * 90 + "\n")  # 101 bytes
    fits.write_text("#!/bin/sh\n" + "#" * 89 + "\n")  # 100 bytes: goes on to the controller
    assert _sbatch_in_a_box([str(big)], conf).stderr == TOO_LONG
    r = _sbatch_in_a_box(["-Q", str(fits)], conf)
    assert r.returncode == 1 and "Unable to contact slurm controller" in r.stderr, r.stderr
