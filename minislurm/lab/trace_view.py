"""The trace-replay explorer: pick a real trace, a policy and a machine size; replay it.

Every change replays the trace slice through the simulator (:func:`minislurm.lab.replays.replay_records`,
the same steps as ``minislurm sim``) and shows the summary numbers and the busy-resource curve
against capacity.  Replays take from a few milliseconds (the lesson trace) to about two seconds
(all of HPC2N under conservative backfill).
"""

from __future__ import annotations

import ipywidgets as widgets

from minislurm.lab.figures import LabFigure, utilisation
from minislurm.lab.replays import PRESETS, Replay, options, replay_records
from minislurm.lab.view import View, html_table

POLICIES = [("FIFO (no backfill)", "fifo"), ("EASY", "easy"), ("conservative (Slurm)", "conservative")]


class TraceExplorer(View):
    """Trace + policy + nodes (+ how many jobs) -> a replay -> summary table and utilisation chart."""

    def __init__(self, trace: str = "lesson", policy: str = "conservative"):
        super().__init__()
        style = {"description_width": "80px"}
        self.trace = widgets.Dropdown(options=[(p.label, k) for k, p in PRESETS.items()], value=trace,
                                      description="trace", style=style, layout=widgets.Layout(width="520px"))
        self.policy = widgets.ToggleButtons(options=POLICIES, value=policy, description="policy",
                                            style={**style, "button_width": "170px"})
        self.nodes = widgets.IntSlider(PRESETS[trace].nodes, min=1, max=512, description="nodes",
                                       continuous_update=False, style=style)
        self.jobs = widgets.IntSlider(self._jobs_of(trace), min=10, max=5000, step=10,
                                      description="jobs", continuous_update=False, style=style)
        self.trace.observe(self._preset, names="value")
        self._observe(self.policy, self.nodes, self.jobs)
        self.widget = widgets.VBox([self.trace, self.policy, widgets.HBox([self.nodes, self.jobs]),
                                    self.out, self.table])
        self.refresh()

    def _preset(self, change) -> None:
        """A new trace brings its own machine: set both sliders, then replay once."""
        p = PRESETS[change["new"]]
        self._quiet = True
        try:
            self.nodes.value, self.jobs.value = p.nodes, self._jobs_of(change["new"])
        finally:
            self._quiet = False
        self.refresh()

    _quiet = False

    @staticmethod
    def _jobs_of(preset: str) -> int:
        """The preset's slice, or all of a short trace (HPC2N: 3,145 usable jobs)."""
        return PRESETS[preset].limit_jobs or {"lesson": 12, "hpc2n": 3145}.get(preset, 1000)

    def refresh(self) -> None:
        if not self._quiet:
            super().refresh()

    def compute(self) -> Replay:
        preset = self.trace.value
        opts = options(preset, policy=self.policy.value, nodes=self.nodes.value, limit_jobs=self.jobs.value)
        return replay_records(opts, PRESETS[preset].skip_jobs)

    def draw(self, result: Replay) -> LabFigure:
        title = f"{PRESETS[self.trace.value].label.split(':')[0]}, {self.policy.value}"
        return utilisation(result.records, result.capacity, title=title, util=result.summary["utilization"])

    def describe(self, result: Replay) -> str:
        s = result.summary
        rows = [[s["jobs"], s["rejected"], f"{(s['utilization'] or 0):.1%}", round((s["wait_mean_s"] or 0) / 60, 1),
                 round((s["wait_p95_s"] or 0) / 60, 1), round(s["bsld_mean"] or 0, 2), s["backfilled"],
                 round(s["wall_s"], 2)]]
        table = html_table(["jobs", "rejected", "utilisation", "mean wait (min)", "p95 wait (min)",
                            "bounded slowdown", "backfilled", "replay took (s)"], rows)
        if result.warnings:
            table += "<p><small>" + "; ".join(result.warnings[:3]) + "</small></p>"
        return table
