"""``eval "$(minislurm env)"``: put the real Slurm command names on PATH, for this shell only.

Installing minislurm never shadows a real Slurm: the names live in the cluster folder's
``bin/`` and only this opt-in puts them first on PATH.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from minislurm.cli.main import ArgumentParser
from minislurm.client import DEFAULT_DIR


def main(argv: list[str]) -> int:
    p = ArgumentParser(prog="minislurm env", description=__doc__.splitlines()[0])
    p.add_argument("--dir", default=str(DEFAULT_DIR))
    args = p.parse_args(argv)
    folder = Path(args.dir).resolve()
    if not (folder / "slurm.conf").exists():
        print(f"minislurm env: error: no cluster in {folder} (run `minislurm cluster up` first)", file=sys.stderr)
        return 1
    print(f"export SLURM_CONF={shlex.quote(str(folder / 'slurm.conf'))}")
    print(f"export PATH={shlex.quote(str(folder / 'bin'))}:\"$PATH\"")
    return 0
