"""The commands find their cluster as Slurm's find theirs, also when a tool cleans the
environment (snakemake drops SLURM_*, JupyterHub's spawner passes no PATH or SLURM_CONF)."""

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
