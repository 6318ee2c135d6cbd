"""minislurm next to real Slurm 22.05, from the sessions recorded on the twin.

``tests/live/sessions.py`` holds shell sessions a learner might type; ``sessions/NAME.out`` what
Slurm 22.05 printed for each on the twin (docker/slurm), job ids and times masked by the
session itself.  The test suite replays every one on minislurm
(tests/live/test_slurm_conformance.py).  Chapter 9 cannot start the twin (the book builds
without Docker), so it draws the recordings and replays a few of them live:

* :func:`load_sessions` reads the test suite's sessions from this checkout, and
  :func:`recorded_sessions` names those with a recording;
* :func:`commands_typed` counts the Slurm commands in a session's script;
* :func:`replay` runs sessions on a fresh minislurm cluster built from the twin's slurm.conf;
* :func:`conformance_figure` draws, per session, the commands it types and the lines Slurm
  printed, each coloured by whether minislurm printed the same line on this page.
"""

from __future__ import annotations

import importlib.util
import re
import tempfile
from pathlib import Path
from types import ModuleType, SimpleNamespace

from matplotlib import colormaps
from matplotlib.patches import Patch, Rectangle

from minislurm.lab.figures import LabFigure, new_figure

COMMANDS = ("sbatch", "srun", "salloc", "squeue", "sacct", "scontrol", "scancel", "sinfo", "sshare", "sprio",
            "sdiag", "sstat")
_COMMAND = re.compile(r"(?<![\w./-])(" + "|".join(COMMANDS) + r")(?![\w-])")
_WAIT = re.compile(r"""upto '[^']*'|upto "(?:[^"\\]|\\.)*\"""")  # a wait's condition: polls, not compared
SAME, DIFFERENT, NOT_REPLAYED = "#59a14f", "#e15759", "#d9d9d9"


def load_sessions() -> ModuleType:
    """``tests/live/sessions.py`` of this checkout (``SESSIONS``, ``recorded``, ``run_mini``)."""
    path = Path(__file__).resolve().parents[2] / "tests" / "live" / "sessions.py"
    spec = importlib.util.spec_from_file_location("twin_sessions", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def recorded_sessions(sessions: ModuleType) -> list[str]:
    """The sessions with a recording, by name (a session being written has none yet)."""
    return sorted(n for n in sessions.SESSIONS if (sessions.HERE / "sessions" / f"{n}.out").exists())


def commands_typed(script: str) -> dict[str, int]:
    """How often each Slurm command appears in a session's script, its comments and the
    conditions it waits for left out."""
    counts = dict.fromkeys(COMMANDS, 0)
    for line in script.splitlines():
        if not line.lstrip().startswith("#"):
            for name in _COMMAND.findall(_WAIT.sub("", line)):
                counts[name] += 1
    return counts


def replay(sessions: ModuleType, names: list[str]) -> dict[str, str]:
    """What minislurm prints for each session, on one cluster built from the twin's slurm.conf
    (as the conformance test runs them, in order)."""
    from minislurm.cluster import LocalCluster

    with tempfile.TemporaryDirectory() as tmp, LocalCluster(conf=sessions.CONF, dir=Path(tmp) / "cluster") as cluster:
        work = Path(tmp) / "work"
        work.mkdir()
        return {name: sessions.run_mini(SimpleNamespace(c=cluster, work=work), name) for name in names}


def conformance_figure(sessions: ModuleType, replays: dict[str, str], title: str = "") -> LabFigure:
    """One row per session: left, the commands its script types; right, the lines Slurm 22.05
    printed, green where minislurm's replay printed the same line at the same place, red where
    it did not, grey for a session not replayed."""
    names = recorded_sessions(sessions)
    typed = [commands_typed(sessions.SESSIONS[n][1]) for n in names]
    fig = new_figure(9.0, 1.3 + 0.27 * len(names))
    grid, bars = fig.subplots(1, 2, sharey=True, gridspec_kw={"width_ratios": [3, 2]})
    peak = max(max(t.values()) for t in typed)
    for row, counts in enumerate(typed):
        for col, name in enumerate(COMMANDS):
            n = counts[name]
            grid.add_patch(Rectangle((col - 0.5, row - 0.5), 1, 1, edgecolor="#dddddd", linewidth=0.5,
                                     facecolor=colormaps["Blues"](0.15 + 0.8 * n / peak) if n else "white"))
            grid.text(col, row, str(n) if n else "", ha="center", va="center", fontsize=7,
                      color="white" if n > peak / 2 else "black")
    grid.set_xlim(-0.5, len(COMMANDS) - 0.5)
    grid.set_ylim(len(names) - 0.5, -0.5)
    grid.set_xticks(range(len(COMMANDS)), COMMANDS, rotation=45, ha="left", fontsize=8)
    grid.xaxis.tick_top()
    grid.set_yticks(range(len(names)), names, fontsize=8)
    grid.tick_params(length=0)
    grid.set_xlabel("times each command is typed in the session's script", fontsize=8)
    longest = 0
    for row, name in enumerate(names):
        lines = sessions.recorded(name).splitlines()
        longest = max(longest, len(lines))
        ours = replays[name].splitlines() if name in replays else None
        colours = [NOT_REPLAYED if ours is None else SAME if i < len(ours) and ours[i] == line else DIFFERENT
                   for i, line in enumerate(lines)]
        bars.barh([row] * len(lines), 1, left=range(len(lines)), height=0.7, color=colours, linewidth=0,
                  gid=f"lines:{name}")
        text = f"{len(lines)}" if ours is None else f"{colours.count(SAME)} of {len(lines)} the same"
        bars.text(len(lines) + 1, row, text, va="center", fontsize=7, gid=f"count:{name}",
                  fontweight="normal" if ours is None else "bold")
    bars.set_xlim(0, longest * 1.8)
    bars.set_xlabel("lines Slurm 22.05 printed on the twin", fontsize=8)
    bars.tick_params(axis="y", length=0)
    handles = [Patch(color=SAME, label="replayed on this page: minislurm printed the same line"),
               Patch(color=DIFFERENT, label="replayed: a different line"),
               Patch(color=NOT_REPLAYED, label="not replayed on this page")]
    fig.legend(handles=handles, loc="outside lower center", ncol=3, fontsize=7, frameon=False)
    fig.suptitle(title, fontsize=10)
    return fig

