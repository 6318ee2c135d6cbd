"""The commands find their cluster as Slurm's find theirs, also when a tool cleans the
environment (snakemake drops SLURM_*, JupyterHub's spawner passes no PATH or SLURM_CONF)."""

import socket
import subprocess


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
