"""Jobs on a time axis, drawn from what a live cluster recorded.

The chapters that run jobs live draw them from the cluster's own records, not from a model:

* :func:`accounting` reads ``sacct -D -X -P`` (every run of every job, a requeued job's runs
  included) into :class:`Run` records; :func:`job_lanes` turns them into one lane per job
  (waiting, then each run, coloured by how it ended) and :func:`node_lanes` into one lane per
  node (which job ran there when);
* :class:`~minislurm.lab.watch.Watch` polls the queue as ``watch squeue`` would and keeps each
  job's states and pending reasons as they changed;
* :func:`failure_figure` puts both around a node failure: the jobs' lanes above the nodes',
  the failed node DOWN from the moment its job's run ended ``NODE_FAIL``;
* :func:`training_runs` says in a few words what each run of ``examples/ddp`` did, from its log;
* :func:`lanes_figure` draws any of them: spans on lanes, labelled where a label fits
  (:func:`~minislurm.lab.figures.fit_labels`), each lane's end state, marked moments (a
  node that crashed, a requeue) and :class:`Message` arrows from lane to lane (the requests
  that carry a job through the cluster's parts, :mod:`minislurm.lab.journey`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from matplotlib.patches import Patch, Rectangle

from minislurm.core.hostlist import expand
from minislurm.lab.figures import LabFigure, fit_labels, new_figure

# A state's colour, and whether its label is written in white.
STATE_COLOURS = {
    "PENDING": ("#e3e3e3", False), "RUNNING": ("#4e79a7", True), "COMPLETING": ("#a0cbe8", False),
    "COMPLETED": ("#59a14f", True), "FAILED": ("#e15759", True), "CANCELLED": ("#f28e2b", True),
    "TIMEOUT": ("#9e9e9e", True), "NODE_FAIL": ("#9d2a2c", True), "REQUEUED": ("#b07aa1", True),
    "DOWN": ("#ffffff", False),
}
DOWN_EDGE = "#9d2a2c"
SACCT_FIELDS = "JobID,JobName,State,Submit,Start,End,NodeList"


@dataclass(frozen=True)
class Span:
    """A stretch of one lane: ``state`` gives its colour, ``label`` is written in it if it fits."""

    start: float
    end: float
    state: str
    label: str = ""


@dataclass(frozen=True)
class Message:
    """An arrow from lane ``sender`` at time ``sent`` to another lane, ``receiver``, at
    ``received``, labelled in a gap between lanes that it crosses; a reply is dashed."""

    sent: float
    sender: str
    received: float
    receiver: str
    label: str = ""
    reply: bool = False


@dataclass(frozen=True)
class Run:
    """One line of ``sacct -D -X -P -o JobID,JobName,State,Submit,Start,End,NodeList``: one run
    of a job (a requeued job has one per run, oldest first)."""

    job: str
    name: str
    state: str
    submit: float
    start: float | None
    end: float | None
    nodes: tuple[str, ...]


def _time(text: str) -> float | None:
    return None if text in ("Unknown", "None", "") else datetime.fromisoformat(text).timestamp()


def read_sacct(text: str) -> list[Run]:
    """Parse ``sacct -D -X -P -o`` :data:`SACCT_FIELDS` output (header line first)."""
    lines = [line.split("|") for line in text.splitlines() if line.strip()]
    runs = []
    for job, name, state, submit, start, end, nodes in lines[1:]:
        hosts = () if nodes in ("", "None assigned") else tuple(expand(nodes))
        runs.append(Run(job, name, state.split()[0], _time(submit), _time(start), _time(end), hosts))
    return runs


def accounting(sh, *jobs: int) -> list[Run]:
    """Every run of ``jobs`` as accounting keeps it (``sh`` is a lab terminal)."""
    ids = ",".join(map(str, jobs))
    return read_sacct(sh(f"sacct -D -X -P -o {SACCT_FIELDS} -j {ids}", show=False))


def job_lanes(runs: list[Run], notes: dict[tuple[str, int], str] | None = None) -> dict[str, list[Span]]:
    """One lane per job: it waits (from its submission, or from its last run's end when it was
    requeued) and runs, each run coloured by its end state.  ``notes[(job, n)]`` labels run n."""
    lanes: dict[str, list[Span]] = {}
    for run in runs:
        lane = lanes.setdefault(run.job, [])
        waited_from = lane[-1].end if lane else run.submit
        if run.start is None:
            continue
        if run.start > waited_from:
            lane.append(Span(waited_from, run.start, "PENDING"))
        n = sum(1 for s in lane if s.state != "PENDING")
        lane.append(Span(run.start, run.end if run.end is not None else run.start, run.state,
                         (notes or {}).get((run.job, n), run.state)))
    return lanes


def node_lanes(runs: list[Run], names: dict[str, str] | None = None) -> dict[str, list[Span]]:
    """One lane per node: each run on every node it held, labelled with its job (or ``names[job]``)."""
    lanes: dict[str, list[Span]] = {}
    for run in runs:
        if run.start is None:
            continue
        for node in run.nodes:
            lanes.setdefault(node, []).append(Span(run.start, run.end or run.start, run.state,
                                                   (names or {}).get(run.job, f"job {run.job}")))
    return dict(sorted(lanes.items()))


def lanes_figure(lanes: dict[str, list[Span]], *, ends: dict[str, str] | None = None,
                 marks: list[tuple[float, str]] = (), messages: list[Message] = (), unit: float = 1.0,
                 unit_name: str = "seconds", title: str = "", width: float = 9.0) -> LabFigure:
    """Spans on lanes (first lane on top), time from the earliest span.

    ``ends[lane]`` is written after the lane's last span (an end state, "still pending");
    ``marks`` are moments drawn across every lane (a crash, a requeue); ``messages`` are
    arrows between lanes, each lane then drawn as a thin line too (a lifeline, as in a
    sequence diagram), so a lane with no span can still send and receive."""
    names = list(lanes)
    spans = [s for lane in lanes.values() for s in lane]
    moments = [t for t, _ in marks] + [t for m in messages for t in (m.sent, m.received)]
    t0 = min([s.start for s in spans] + moments)
    t1 = max([s.end for s in spans] + moments)
    room = (t1 - t0) / unit or 1.0
    fig = new_figure(width, 1.4 + 0.42 * len(names))
    ax = fig.subplots()
    labels, seen = [], []
    for row, name in enumerate(names):
        for s in lanes[name]:
            colour, white = STATE_COLOURS.get(s.state, ("#bab0ac", False))
            x0, w = (s.start - t0) / unit, max((s.end - s.start) / unit, room / 400)
            down = s.state == "DOWN"
            ax.add_patch(Rectangle((x0, row - 0.32), w, 0.64, facecolor=colour, linewidth=0.6,
                                   edgecolor=DOWN_EDGE if down else "black", hatch="xx" if down else None,
                                   gid=f"span:{name}:{s.state}"))
            if s.state not in seen:
                seen.append(s.state)
            if s.label:
                text = ax.text(x0 + w / 2, row, s.label, ha="center", va="center", fontsize=7,
                               color="white" if white else "black", fontweight="bold" if white else "normal")
                labels.append((text, (x0, row - 0.32, x0 + w, row + 0.32), None))
        if ends and name in ends and lanes[name]:
            last = max(s.end for s in lanes[name])
            ax.text((last - t0) / unit + room / 150, row, ends[name], ha="left", va="center", fontsize=7,
                    fontweight="bold", color=STATE_COLOURS.get(ends[name].split()[0], ("#444444", 0))[0],
                    gid=f"end:{name}")
    message_labels = _draw_messages(ax, names, messages, t0, unit) if messages else []
    for when, text in marks:
        x = (when - t0) / unit
        ax.axvline(x, color=DOWN_EDGE, linestyle="--", linewidth=1, gid=f"mark:{text}")
        ax.text(x + room / 200, -0.6, text, ha="left", va="center", fontsize=7, color=DOWN_EDGE)
    right = room * (1.18 if ends else 1.02)
    ax.set_xlim(-room * 0.01, right)
    ax.set_ylim(len(names) - 0.5, -0.5 - (0.5 if marks else 0))
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_xlabel(f"time ({unit_name})")
    ax.tick_params(axis="y", length=0)
    handles = [Patch(facecolor=STATE_COLOURS.get(s, ("#bab0ac", 0))[0], edgecolor=DOWN_EDGE if s == "DOWN" else "black",
                     hatch="xx" if s == "DOWN" else None, label=s) for s in seen]
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=7, frameon=False)
    ax.set_title(title, fontsize=10)
    _place_message_labels(fig, ax, message_labels)
    fit_labels(fig, labels)
    return fig


def _draw_messages(ax, names: list[str], messages: list[Message], t0: float, unit: float) -> list:
    """Lifelines, then each message's arrow; returns its labels' places to choose from (see
    :func:`_place_message_labels`): each gap between lanes that the arrow crosses, from its
    sender's side, right of the arrow, then left.  A label already written at the same tail
    (one request sent to several nodes) is written once."""
    for row in range(len(names)):
        ax.axhline(row, color="#bbbbbb", linewidth=0.6, zorder=0)
    labels, written = [], set()
    for m in messages:
        a, b = names.index(m.sender), names.index(m.receiver)
        x0, x1 = (m.sent - t0) / unit, (m.received - t0) / unit
        ax.annotate("", xy=(x1, b), xytext=(x0, a), gid=f"message:{m.sender}>{m.receiver}:{m.label}",
                    arrowprops=dict(arrowstyle="-|>", color="black", linewidth=0.9, shrinkA=0, shrinkB=0,
                                    linestyle="--" if m.reply else "-"))
        if not m.label or (m.label, m.sent, m.sender) in written:
            continue
        written.add((m.label, m.sent, m.sender))
        step = 1 if b > a else -1
        gaps = [row + step / 2 for row in range(a, b, step)]
        places = [(x0 + (x1 - x0) * (y - a) / (b - a), y, align) for y in gaps for align in ("left", "right")]
        text = ax.text(0, 0, m.label, fontsize=7, va="center", style="italic" if m.reply else "normal",
                       gid=f"label:{m.label}", bbox=dict(facecolor="white", edgecolor="none", alpha=0.8, pad=0.5))
        labels.append((text, places))
    return labels


def _place_message_labels(fig: LabFigure, ax, labels: list) -> None:
    """Put each message's label at the first of its places where it stays inside the axes and
    clear of the labels placed before it, else where it covers least of them.  Labels with
    fewer places go first: a message between neighbouring lanes has one gap to write in."""
    if not labels:
        return
    fig.draw_without_rendering()
    frame = ax.get_window_extent()
    to_data = ax.transData.inverted()
    nudge = to_data.transform([(4, 0)])[0][0] - to_data.transform([(0, 0)])[0][0]
    taken = []

    def covered(box) -> float:
        outside = max(frame.x0 - box.x0, 0) + max(box.x1 - frame.x1, 0)
        return outside * box.height + sum(max(min(box.x1, t.x1) - max(box.x0, t.x0), 0) *
                                          max(min(box.y1, t.y1) - max(box.y0, t.y0), 0) for t in taken)

    def put(text, place) -> float:
        x, y, align = place  # "left": the text starts right of the arrow
        text.set_position((x + nudge if align == "left" else x - nudge, y))
        text.set_horizontalalignment(align)
        return covered(text.get_window_extent().padded(1))

    for text, places in sorted(labels, key=lambda label: len(label[1])):
        put(text, min(places, key=lambda place: put(text, place)))  # the first of the least covered
        taken.append(text.get_window_extent())


def failure_figure(runs: list[Run], node: str, *, names: dict[str, str] | None = None,
                   notes: dict[tuple[str, int], str] | None = None, title: str = "") -> LabFigure:
    """A failure, requeue and resume from accounting: one lane per job (``names[job]`` after its
    id), labelled with ``notes``, then one lane per node; ``node`` is DOWN from the end of the
    run that ended NODE_FAIL on it."""
    lost = next(r for r in runs if r.state == "NODE_FAIL" and node in r.nodes)
    jobs = {f"job {job}" + (f" ({names[job]})" if names and job in names else ""): spans
            for job, spans in job_lanes(runs, notes).items()}
    nodes = node_lanes(runs, names={job: f"{job} {name}" for job, name in (names or {}).items()})
    last = max(r.end or r.start or r.submit for r in runs)
    nodes.setdefault(node, []).append(Span(lost.end, last, "DOWN", "DOWN"))
    return lanes_figure({**jobs, **nodes}, marks=[(lost.end, f"{node} DOWN: job {lost.job} requeued")],
                        title=title)


def training_runs(log: str) -> list[str]:
    """Each run of ``examples/ddp/train.sbatch`` in its log (``--open-mode=append`` keeps them
    all, each after its ``=== job N, restart R`` line), in a few words: the step it started at
    and the last it saved, or that it found the run finished."""
    out = []
    for part in re.split(r"^=== job .*$", log, flags=re.M)[1:]:
        resumed = re.search(r"resuming at step (\d+)", part)
        saved = [int(s) for s in re.findall(r"\| step (\d+):", part)]
        if "nothing to do" in part:
            out.append("finished already")
        else:
            first = int(resumed.group(1)) if resumed else 0
            out.append(f"steps {first}-{max(saved)}" if saved else f"from step {first}, nothing saved")
    return out
