"""Skip one slow import that grading never uses, in the grader and in the notebook's kernel.

nbformat validates notebooks with jsonschema, and jsonschema registers its optional "iri" format
check by importing ``rfc3987_syntax``, which compiles a Lark grammar at import: about 0.8 s on
an idle machine and several seconds on a busy one.  Every grading step pays it at least twice
(the otter process and the kernel, which imports otter), and no notebook schema uses that
format.  Blocking the import (``sys.modules[name] = None`` makes it raise ImportError, which
jsonschema expects) halved the time of ``otter run`` on one submission on the project's
2-core machines.

- :func:`skip_slow_imports` for this process;
- :func:`ipython_dir`: an IPython directory whose startup file does the same in the kernels
  started with ``IPYTHONDIR`` pointing at it (it also keeps the instructor's own IPython
  startup files out of the grading kernels);
- ``python -m minislurm.grade.quick ARGS``: otter's command line with the import skipped.
"""

from __future__ import annotations

import sys
from pathlib import Path

SLOW_UNUSED = ("rfc3987_syntax",)
STARTUP = ("# minislurm grade: skip imports that grading never uses (see minislurm/grade/quick.py)\n"
           "import sys\n"
           f"for _name in {SLOW_UNUSED!r}:\n"
           "    sys.modules.setdefault(_name, None)\n"
           "del _name\n")


def skip_slow_imports() -> None:
    for name in SLOW_UNUSED:
        sys.modules.setdefault(name, None)


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
