"""The sbatch explorer: a script, some ``SBATCH_*`` variables and a command line, and what sbatch makes of them.

:func:`explain` runs minislurm's own option pipeline (the directive scanner, the input
environment variables and the command-line parser, combined as sbatch combines them) and
reports, option by option, the value each source gave and the one that wins; which script lines
sbatch read as directives and which it skipped; the output file name for an example job id;
and, for a request sbatch would refuse, its error message.  The view colours the script's lines.
"""

from __future__ import annotations

import html
import shlex
from dataclasses import dataclass, field

import ipywidgets as widgets
from matplotlib.patches import Patch, Rectangle

from minislurm.core.directives import MAGIC, build_spec, check_script, directive_spec
from minislurm.core.options import apply_options, env_options, split_options
from minislurm.core.optvalues import OptionError
from minislurm.core.patterns import default_output, expand_pattern
from minislurm.lab.figures import LabFigure, new_figure
from minislurm.lab.view import View, html_table

#: JobSpec field -> the option that sets it, in the order the table lists them.
OPTIONS = (("job_name", "--job-name"), ("partition", "--partition"), ("nodes_min", "--nodes"),
           ("ntasks", "--ntasks"), ("ntasks_per_node", "--ntasks-per-node"), ("gres", "--gres"),
           ("time_limit_min", "--time"), ("mem_mb", "--mem"), ("output", "--output"),
           ("open_mode", "--open-mode"), ("requeue", "--requeue"), ("signal", "--signal"),
           ("array", "--array"), ("dependency", "--dependency"))
SOURCES = ("script", "environment", "command line")
KINDS = {"directive": "#59a14f", "comment": "#d9d9d9", "ignored": "#e15759", "command": "#4e79a7",
         "after": "#ffffff"}
EXAMPLE_JOB_ID = 1234

DEFAULT_SCRIPT = """#!/bin/bash
#SBATCH --job-name=train
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=4
#SBATCH --gres=gpu:4
#SBATCH --time=02:00:00
  #SBATCH --partition=debug
#SBATCH --output=%x-%j.out
module load cuda
#SBATCH --requeue
srun python train.py
"""


def _show(value) -> str:
    if value is None:
        return ""
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    if hasattr(value, "text") and getattr(value, "text"):
        return value.text
    if isinstance(value, float) and value.is_integer():
        return f"{int(value)} min" if value != float("inf") else "UNLIMITED"
    return str(value)


@dataclass
class Explained:
    lines: list[tuple[str, str]]  # (line, kind): directive, comment, ignored, command, after
    rows: list[tuple[str, dict[str, str], str]] = field(default_factory=list)  # option, by source, final
    error: str | None = None
    output_file: str = ""

    def final(self, option: str) -> str:
        return next((f for o, _, f in self.rows if o == option), "")

    def winner(self, option: str) -> str | None:
        """The source whose value the job gets (the last one that set the option), or None."""
        for o, values, _ in self.rows:
            if o == option:
                return next((s for s in reversed(SOURCES) if values.get(s)), None)
        return None


def classify(script: str) -> list[tuple[str, str]]:
    """Each line with what sbatch makes of it: a directive it reads, a comment, a directive-looking
    line it ignores (indented, or after the first command), the first command, or the rest."""
    out, scanning = [], True
    for line in script.split("\n"):
        stripped = line.strip()
        if scanning and line.startswith(MAGIC):
            kind = "directive"
        elif stripped.startswith(MAGIC):
            kind = "ignored"
        elif not scanning:
            kind = "after"
        elif stripped == "" or stripped.startswith("#"):
            kind = "comment"
        else:
            kind, scanning = "command", False
        out.append((line, kind))
    while out and out[-1][0] == "":
        out.pop()
    return out


def parse_env(text: str) -> dict[str, str]:
    """``"SBATCH_JOB_NAME=x SBATCH_TIMELIMIT=5"`` -> a dict (shell quoting allowed)."""
    env = {}
    for word in shlex.split(text):
        name, sep, value = word.partition("=")
        if not sep:
            raise OptionError(f"not a NAME=value assignment: {word!r}")
        env[name] = value
    return env


def explain(script: str, env_text: str = "", cli_text: str = "") -> Explained:
    """What sbatch would do with ``script``, the variables in ``env_text`` and ``cli_text``."""
    result = Explained(classify(script))
    try:
        env = parse_env(env_text)
        words = shlex.split(cli_text)
        check_script(script)
        specs = {"script": directive_spec(script, now=0.0), "environment": env_options(env, prog="sbatch", now=0.0),
                 "command line": apply_options(split_options(words)[0], prog="sbatch", now=0.0)}
        final, _ = build_spec(script, env, words + ["train.sh"], now=0.0, path="train.sh")
    except (OptionError, ValueError) as err:
        result.error = getattr(err, "text", str(err))
        return result
    for attr, option in OPTIONS:
        values = {s: _show(getattr(spec, attr)) for s, spec in specs.items()}
        if any(values.values()) or attr == "job_name":
            result.rows.append((option, values, _show(getattr(final, attr))))
    pattern = final.output or default_output(final.array is not None)
    result.output_file = expand_pattern(pattern, job_id=EXAMPLE_JOB_ID, job_name=final.job_name or "sbatch",
                                        user="you", array_job_id=EXAMPLE_JOB_ID,
                                        array_task_id=final.array.indices[0] if final.array else None)
    return result


def script_figure(lines: list[tuple[str, str]]) -> LabFigure:
    """The script, one row per line, coloured by what sbatch made of it."""
    shown = lines[:30]
    fig = new_figure(8.0, 0.9 + 0.24 * len(shown))
    ax = fig.subplots()
    for i, (text, kind) in enumerate(shown):
        ax.add_patch(Rectangle((0, i - 0.45), 1, 0.9, facecolor=KINDS[kind], alpha=0.35, edgecolor="none",
                               gid=f"line:{i}:{kind}"))
        ax.text(0.01, i, text or " ", va="center", ha="left", family="monospace", fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_ylim(len(shown) - 0.5, -0.5)
    ax.axis("off")
    labels = {"directive": "directive read", "comment": "comment", "ignored": "#SBATCH ignored",
              "command": "first command: reading stops"}
    fig.legend(handles=[Patch(facecolor=KINDS[k], alpha=0.35, label=v) for k, v in labels.items()],
               loc="outside lower center", ncol=4, fontsize=7, frameon=False)
    return fig


class SbatchExplorer(View):
    """Script + SBATCH_* variables + command line -> the options the job gets, and from where.

    ``self.script``, ``self.env`` and ``self.cli`` are the text inputs; ``self.result`` the
    latest :class:`Explained`.
    """

    def __init__(self, script: str = DEFAULT_SCRIPT, env: str = "SBATCH_TIMELIMIT=30", cli: str = "--nodes=1"):
        super().__init__()
        wide = widgets.Layout(width="640px")
        style = {"description_width": "130px"}
        self.script = widgets.Textarea(script, description="train.sh", continuous_update=False, style=style,
                                       layout=widgets.Layout(width="640px", height="230px"))
        self.env = widgets.Text(env, description="environment", continuous_update=False, style=style, layout=wide,
                                placeholder="SBATCH_JOB_NAME=... SBATCH_TIMELIMIT=...")
        self.cli = widgets.Text(cli, description="sbatch [options]", continuous_update=False, style=style,
                                layout=wide, placeholder="-J name --time=30 ...")
        self._observe(self.script, self.env, self.cli)
        self.widget = widgets.VBox([self.script, self.env, self.cli, self.out, self.table])
        self.refresh()

    def compute(self) -> Explained:
        return explain(self.script.value, self.env.value, self.cli.value)

    def draw(self, result: Explained) -> LabFigure:
        return script_figure(result.lines)

    def describe(self, result: Explained) -> str:
        cmd = html.escape(f"$ {self.env.value} sbatch {self.cli.value} train.sh".replace("  ", " "))
        if result.error:
            return f"<pre>{cmd}\n{html.escape(result.error)}</pre>"
        rows = [[option, *(values[s] for s in SOURCES), f"{final}  ({result.winner(option) or 'default'})"]
                for option, values, final in result.rows]
        return (f"<pre>{cmd}\nSubmitted batch job {EXAMPLE_JOB_ID}</pre>"
                + html_table(["option", *SOURCES, "the job gets"], rows,
                             caption=f"output file of job {EXAMPLE_JOB_ID}: {result.output_file}"))
