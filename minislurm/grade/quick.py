"""Skip the slow import that grading never uses (:mod:`minislurm.core.lazyimports`), in the
grader and in the notebook's kernel: every grading step pays it at least twice (the otter
process and the kernel, which imports otter); skipping it halved the time of ``otter run`` on
one submission on the project's 2-core machines.

- :func:`skip_slow_imports` for this process;
- :func:`ipython_dir`: an IPython directory whose startup file does the same in the kernels
  started with ``IPYTHONDIR`` pointing at it (it also keeps the instructor's own IPython
  startup files out of the grading kernels);
- ``python -m minislurm.grade.quick ARGS``: otter's command line with the import skipped.
"""

from __future__ import annotations

import sys
from pathlib import Path

from minislurm.core.lazyimports import SLOW_UNUSED, skip_slow_imports

__all__ = ["ipython_dir", "skip_slow_imports"]

STARTUP = ("# minislurm grade: skip imports that grading never uses (see minislurm/core/lazyimports.py)\n"
           "import sys\n"
           f"for _name in {SLOW_UNUSED!r}:\n"
           "    sys.modules.setdefault(_name, None)\n"
           "del _name\n")


def ipython_dir(path: Path) -> Path:
    """Make ``path`` an IPython directory with the skipping startup file; returns it."""
    startup = path / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-minislurm-grade.py").write_text(STARTUP)
    return path


if __name__ == "__main__":
    skip_slow_imports()
    from otter.cli import cli

    cli(args=sys.argv[1:], prog_name="otter")
