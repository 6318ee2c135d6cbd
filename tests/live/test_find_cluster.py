"""The commands find their cluster as Slurm's find theirs, also when a tool cleans the
environment (snakemake drops SLURM_*, JupyterHub's spawner passes no PATH or SLURM_CONF)."""

import socket
import subprocess

import pytest


def test_a_clusters_own_commands_find_it_with_an_empty_environment(live):
    live.reset()
    squeue = live.c.dir / "bin" / "squeue"
    r = subprocess.run([str(squeue), "-h", "-o", "%i"], env={}, cwd=live.work, capture_output=True, text=True,
                       timeout=60)
    # Before: "Unable to contact slurm controller (no slurm.conf at ~/.minislurm/cluster/slurm.conf ...)".
    assert (r.returncode, r.stderr) == (0, "")
    job = live.sbatch("--wrap", "true")
    r = subprocess.run([str(live.c.dir / "bin" / "sacct"), "-n", "-X", "-j", str(job), "-o", "JobID"], env={},
                       cwd=live.work, capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout.split()) == (0, [str(job)])


def test_scontrol_ping_says_whether_the_controller_answers(live, tmp_path):
    scontrol = str(live.c.dir / "bin" / "scontrol")
    r = subprocess.run([scontrol, "ping"], env=live.c.env(), capture_output=True, text=True, timeout=60)
    host = live.c.conf_path.read_text().split("SlurmctldHost=")[1].split()[0].split("(")[0]
    # Before: "scontrol: error: Invalid command: ping" (or the help).
    assert (r.returncode, r.stdout) == (0, f"Slurmctld(primary) at {host} is UP\n")
    with socket.socket() as s:  # a port nothing listens on once it is closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    nowhere = tmp_path / "slurm.conf"
    nowhere.write_text(f"SlurmctldHost=gone(127.0.0.1)\nSlurmctldPort={port}\n")
    r = subprocess.run([scontrol, "ping"], env={**live.c.env(), "SLURM_CONF": str(nowhere)},
                       capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout) == (1, "Slurmctld(primary) at gone is DOWN\n")


SYSTEM_SESSION = r"""
set -e
mount --make-rprivate /
for d in /etc /usr/local/bin; do  # this test's own view of both: the host's stay as they are
    mkdir -p "$T/up$d" "$T/work$d"
    mount -t overlay overlay -o "lowerdir=$d,upperdir=$T/up$d,workdir=$T/work$d" "$d"
done
"$PY" -m minislurm.cli.main cluster up --system --nodes 2 --dir "$T/c" > "$T/up.txt"
mkdir -p "$T/jobs" && cd "$T/jobs"
# No environment at all: PATH, SLURM_CONF and HOME come from nowhere (JupyterHub's spawner).
env -i /bin/sh -c 'sbatch --parsable --wrap true; sinfo -h -o %D; readlink /etc/slurm/slurm.conf'
echo "state=$(env -i HOME=/nonexistent "$PY" -c 'import sys; from minislurm.cli.main import main; sys.exit(main(["sinfo", "-h", "-o", "%D"]))')"
"$PY" -m minislurm.cli.main cluster down --dir "$T/c" > /dev/null
ls /etc/slurm /usr/local/bin/sbatch 2>&1 || true
"""


def test_cluster_up_system_is_found_by_every_shell_and_down_takes_it_back(tmp_path):
    """``cluster up --system`` (root) puts /etc/slurm/slurm.conf and the commands in
    /usr/local/bin, in a mount namespace of the test's own (overlays on /etc and /usr/local/bin),
    so a shell with an empty environment submits; ``cluster down`` removes both again."""
    import os
    import shutil
    import sys
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare (a mount namespace)")
    r = subprocess.run(["unshare", "-m", "bash", "-c", SYSTEM_SESSION], env={**os.environ, "T": str(tmp_path),
                       "PY": sys.executable}, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    job, nodes, conf, state, *gone = r.stdout.split("\n")
    assert job.isdigit() and nodes == "2" and conf == str(tmp_path / "c" / "slurm.conf"), r.stdout
    assert state == "state=2", r.stdout  # a command that is not the cluster's found it through /etc/slurm
    assert "".join(gone).count("No such file or directory") == 2, r.stdout
    assert "This machine's Slurm is now this cluster" in (tmp_path / "up.txt").read_text()


def test_cluster_up_system_refuses_a_machine_with_another_slurm(tmp_path):
    import os
    import shutil
    import sys
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare (a mount namespace)")
    session = SYSTEM_SESSION.split('"$PY" -m minislurm.cli.main cluster up')[0] + (
        'printf "#!/bin/sh\\necho real\\n" > /usr/local/bin/sbatch; chmod +x /usr/local/bin/sbatch\n'
        '"$PY" -m minislurm.cli.main cluster up --system --nodes 2 --dir "$T/c" || echo "rc=$?"\n'
        'ls "$T/c/pids" 2>&1 | grep -c "No such" ; cat /usr/local/bin/sbatch\n')
    r = subprocess.run(["unshare", "-m", "bash", "-c", session], env={**os.environ, "T": str(tmp_path),
                       "PY": sys.executable}, capture_output=True, text=True, timeout=60)
    assert r.stderr.strip().endswith("minislurm cluster: error: /usr/local/bin/sbatch is not minislurm's "
                                     "(a real Slurm?)"), r.stderr
    assert r.stdout.split("\n")[:3] == ["rc=1", "1", "#!/bin/sh"], r.stdout
