"""The failure and checkpoint explorer: how often to checkpoint when nodes die.

Three knobs: the node MTBF, the checkpoint interval and the cost of one checkpoint.  The chart
shows, over a range of intervals, the GPU-hours failures throw away (simulated: a Philly slice
replayed with seeded node failures, see :func:`minislurm.lab.replays.checkpoint_sweep`), the
GPU-hours spent writing checkpoints, and their sum, with the chosen interval and Young's
optimum for a one-node job marked.  Changing the MTBF re-runs the sweep (about a second);
the interval and the cost only re-read cached replays.
"""

from __future__ import annotations

import ipywidgets as widgets

from minislurm.lab.figures import LabFigure, checkpoint_tradeoff
from minislurm.lab.replays import INTERVALS, FailureSetup, SweepPoint, checkpoint_sweep, work_gpu_h, young_daly
from minislurm.lab.view import View, html_table

HOUR = 3600.0


CHOICES_H = (1 / 6, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 4, 6, 8, 12, 16, 24)


def _label(hours: float) -> str:
    return f"{hours * 60:.0f} min" if hours < 1 else f"{hours:g} h"


class FailureExplorer(View):
    """MTBF + checkpoint interval + checkpoint cost -> lost GPU-hours against overhead.

    ``self.result`` is the sorted list of :class:`SweepPoint` (the standard intervals plus the
    chosen one); ``self.chosen`` the point for the chosen interval.
    """

    def __init__(self, setup: FailureSetup = FailureSetup(), *, mtbf_h: float = 1000.0,
                 interval_h: float = 1.0, cost_s: float = 60.0):
        super().__init__()
        self.setup = setup
        style = {"description_width": "200px"}
        layout = widgets.Layout(width="520px")
        self.mtbf = widgets.FloatLogSlider(mtbf_h, base=10, min=2, max=4, step=0.1, readout_format=".0f",
                                           description="node MTBF (hours)", continuous_update=False,
                                           style=style, layout=layout)
        choices = sorted(set(CHOICES_H) | {interval_h})
        self.interval = widgets.SelectionSlider(options=[(_label(h), h) for h in choices], value=interval_h,
                                                description="checkpoint every", continuous_update=False,
                                                style=style, layout=layout)
        self.cost = widgets.IntSlider(int(cost_s), min=5, max=900, step=5, description="one checkpoint (s)",
                                      continuous_update=False, style=style, layout=layout)
        self._observe(self.mtbf, self.interval, self.cost)
        self.chosen: SweepPoint | None = None
        self.widget = widgets.VBox([self.mtbf, self.interval, self.cost, self.out, self.table])
        self.refresh()

    def compute(self) -> list[SweepPoint]:
        chosen = self.interval.value * HOUR
        points = checkpoint_sweep(self.setup, round(self.mtbf.value), list(INTERVALS) + [chosen])
        self.chosen = next(p for p in points if p.interval_s == chosen)
        return points

    def draw(self, points: list[SweepPoint]) -> LabFigure:
        mtbf = round(self.mtbf.value)
        return checkpoint_tradeoff(points, self.cost.value, chosen_s=self.chosen.interval_s,
                                   young_s=young_daly(self.cost.value, mtbf * HOUR),
                                   title=f"{self.setup.jobs} Philly jobs on {self.setup.nodes} x "
                                         f"{self.setup.gpus_per_node} GPUs, node MTBF {mtbf} h")

    def describe(self, points: list[SweepPoint]) -> str:
        cost, p = self.cost.value, self.chosen
        work = work_gpu_h(self.setup)
        best = min(points, key=lambda q: q.total_gpu_h(cost))
        rows = [[f"{p.interval_s / HOUR:.2f}", p.failures, round(p.lost_gpu_h), round(p.overhead_gpu_h(cost)),
                 round(p.total_gpu_h(cost)), f"{p.total_gpu_h(cost) / work:.1%}"]]
        return html_table(["interval (h)", "failed runs", "GPU-h lost", "GPU-h checkpointing", "GPU-h total",
                           "of the useful work"], rows,
                          caption=f"best interval tried: {best.interval_s / HOUR:g} h; "
                                  f"useful work in the slice: {work:,.0f} GPU-h")
