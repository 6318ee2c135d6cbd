"""The GRES packing explorer: job sizes and node sizes in, select/cons_tres's placement out.

Two text boxes (GPUs per node, GPU jobs in submission order), the queue order (submission, or
largest first as ``PriorityWeightJobSize`` makes it) and the size of a probe job.  Every change
re-runs :func:`minislurm.lab.packing.pack` (minislurm's submission checks, priority and one
scheduling pass) and draws each node's GPUs coloured by the job that holds them; free GPUs that
a job of the probe size could not use are hatched red: they are stranded.
"""

from __future__ import annotations

import ipywidgets as widgets
from matplotlib.patches import Patch, Rectangle

from minislurm.lab.figures import PALETTE, LabFigure, new_figure
from minislurm.lab.packing import PackResult, pack, parse_jobs, parse_nodes
from minislurm.lab.view import View, html_table

DEFAULT_NODES = "4x8"
DEFAULT_JOBS = "3,2,6,5,2,8,4,3"
ORDER_OPTIONS = [("submission order", "submit"), ("largest first (job-size priority)", "largest")]
STRANDED = "#d62728"


def packing_figure(result: PackResult, want: int, *, title: str | None = None) -> LabFigure:
    """One row per node, one square per GPU: the job holding it, or free (red hatch: stranded)."""
    widest = max(result.capacity)
    fig = new_figure(max(6.5, min(2.0 + 0.55 * widest, 11.0)), 1.3 + 0.5 * len(result.capacity))
    ax = fig.subplots()
    colour = {j.name: PALETTE[i % len(PALETTE)] for i, j in enumerate(result.jobs)}
    stranded = result.stranded_cells(want)
    for n, row in enumerate(result.owner):
        for g, name in enumerate(row):
            if name is not None:
                ax.add_patch(Rectangle((g, n - 0.4), 0.92, 0.8, facecolor=colour[name], edgecolor="black",
                                       linewidth=0.6, gid=f"gpu:{n}:{g}:{name}"))
                ax.text(g + 0.46, n, name, ha="center", va="center", fontsize=8, color="white",
                        fontweight="bold")
            elif (n, g) in stranded:
                ax.add_patch(Rectangle((g, n - 0.4), 0.92, 0.8, facecolor="white", edgecolor=STRANDED,
                                       hatch="///", linewidth=1.2, gid=f"stranded:{n}:{g}"))
            else:
                ax.add_patch(Rectangle((g, n - 0.4), 0.92, 0.8, facecolor="white", edgecolor="grey",
                                       linestyle="--", linewidth=0.8, gid=f"free:{n}:{g}"))
    ax.set_xlim(-0.1, widest + 0.1)
    ax.set_ylim(len(result.capacity) - 0.5, -0.5)
    ax.set_yticks(range(len(result.capacity)), [f"{name} ({cap} GPUs)" for name, cap in
                                                zip(result.node_names, result.capacity)], fontsize=8)
    ax.set_xticks([g + 0.46 for g in range(widest)], [f"gpu{g}" for g in range(widest)], fontsize=7)
    ax.tick_params(length=0)
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    handles = [Patch(facecolor="white", edgecolor="grey", linestyle="--", label="free"),
               Patch(facecolor="white", edgecolor=STRANDED, hatch="///", label=f"stranded for a {want}-GPU job")]
    fig.legend(handles=handles, loc="outside lower center", ncol=2, fontsize=7, frameon=False)
    ax.set_title(title or f"{result.busy} of {result.total_gpus} GPUs busy; a {want}-GPU job fits "
                          f"{result.fits(want)} time(s), {result.stranded(want)} GPU(s) stranded", fontsize=9)
    return fig


def summary(result: PackResult, want: int) -> str:
    free = sum(result.free)
    return (f"{result.busy} of {result.total_gpus} GPUs busy, {free} free; a {want}-GPU one-node job "
            f"fits {result.fits(want)} time(s), leaving {result.stranded(want)} GPU(s) stranded")


class GresPackingExplorer(View):
    """Node sizes + job sizes + queue order + probe size -> placement figure and job table.

    ``self.nodes`` / ``self.jobs`` are the text boxes, ``self.order`` the queue order buttons,
    ``self.want`` the probe slider; ``self.result`` the latest :class:`PackResult`.
    """

    def __init__(self, nodes: str = DEFAULT_NODES, jobs: str = DEFAULT_JOBS, *, order: str = "submit",
                 want: int | None = None):
        super().__init__()
        style = {"description_width": "190px"}
        wide = widgets.Layout(width="560px")
        self.nodes = widgets.Text(nodes, description="GPUs per node", continuous_update=False,
                                  placeholder="e.g. 8,8,4 or 4x8", style=style, layout=wide)
        self.jobs = widgets.Text(jobs, description="jobs (GPUs; NxG = N nodes)", continuous_update=False,
                                 placeholder="e.g. 3,2,4,2x8", style=style, layout=wide)
        self.order = widgets.ToggleButtons(options=ORDER_OPTIONS, value=order, description="queue order",
                                           style={"description_width": "190px", "button_width": "230px"})
        self.want = widgets.IntSlider(want or 4, min=1, max=16, description="probe job (GPUs on 1 node)",
                                      continuous_update=False, style=style, layout=wide)
        self._observe(self.nodes, self.jobs, self.order, self.want)
        self.widget = widgets.VBox([self.nodes, self.jobs, self.order, self.want, self.out, self.table])
        self.refresh()

    def compute(self) -> PackResult:
        return pack(parse_nodes(self.nodes.value), parse_jobs(self.jobs.value), order=self.order.value)

    def draw(self, result: PackResult) -> LabFigure:
        return packing_figure(result, self.want.value)

    def describe(self, result: PackResult) -> str:
        rows = []
        for job in result.jobs:
            req = f"{job.nodes} x {job.gpus}" if job.nodes > 1 else str(job.gpus)
            if job.name in result.placed:
                p = result.placed[job.name]
                where = ", ".join(f"{n}:{','.join(map(str, g))}" for n, g in zip(p.nodes, p.gpus))
                how = "backfill" if p.backfilled else "main scheduler"
                rows.append([job.name, req, "R", where, how, ""])
            elif job.name in result.pending:
                rows.append([job.name, req, "PD", "", "", result.pending[job.name]])
            else:
                rows.append([job.name, req, "rejected", "", "", result.rejected[job.name]])
        return html_table(["job", "GPUs (nodes x per node)", "ST", "node:GPU indices", "started by",
                           "reason / error"], rows, caption=summary(result, self.want.value))
