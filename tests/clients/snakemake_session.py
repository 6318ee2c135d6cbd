"""What a Snakemake user does, run by the client virtualenv's Python against a live cluster.

    python snakemake_session.py FOLDER      (SLURM_CONF and PATH aim at the cluster)

A three-rule workflow run with the Slurm executor plugin (`--executor slurm --jobs 4`, an
account and a partition): each rule a Slurm job, the workflow ending by itself; then the same
with an account that does not exist, which the plugin refuses (it asks sacctmgr).  Prints one
JSON object.  Nothing here imports minislurm.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

SNAKEFILE = """
rule all:
    input: "c.txt"

rule a:
    output: "a.txt"
    shell: "echo a > {output}"

rule b:
    input: "a.txt"
    output: "b.txt"
    shell: "cat {input} > {output}; echo b >> {output}"

rule c:
    input: "b.txt"
    output: "c.txt"
    shell: "cat {input} > {output}; echo c >> {output}"
"""


def snakemake(work, account, timeout=240):
    snakemake = os.path.join(os.path.dirname(sys.executable), "snakemake")
    return subprocess.run([snakemake, "--executor", "slurm", "--jobs", "4", "--default-resources",
                           f"slurm_account={account}", "slurm_partition=gpu", "runtime=10",
                           "--slurm-init-seconds-before-status-checks", "1"],
                          cwd=work, capture_output=True, text=True, timeout=timeout)


def main(folder):
    good, bad = Path(folder, "good"), Path(folder, "bad")
    for work in (good, bad):
        work.mkdir(parents=True)
        (work / "Snakefile").write_text(SNAKEFILE)
    ran = snakemake(good, "root")
    refused = snakemake(bad, "nosuch")
    sacct = subprocess.run(["sacct", "-a", "-X", "-n", "-P", "-o", "JobName,State,Account,Partition"],
                           capture_output=True, text=True, check=True).stdout.splitlines()
    return {"rc": ran.returncode, "c": (good / "c.txt").read_text() if (good / "c.txt").exists() else None,
            "log": ran.stderr[-3000:], "sacct": sacct, "refused_rc": refused.returncode,
            "refused": refused.stderr[-3000:]}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
