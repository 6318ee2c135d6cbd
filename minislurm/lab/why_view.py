"""Why is my job waiting? A widget that asks the scheduler, on a live cluster or in a scenario.

``why_waiting(sh, job_id)`` asks a live cluster's controller (a terminal from
:func:`minislurm.lab.terminal.start`), with a button to ask again as the queue moves.
``why_waiting(AFTERNOON, "eval-long", at=45 * 60)`` stops a lesson scenario at a moment of your
choice (a job menu and a minute slider) and explains it with the same code: the reason in
plain words, the start the plan holds and what holds it there, the jobs ahead, the what-ifs
(a time limit that would start it now, another partition), and, in a scenario, what then
really happened, so each statement can be checked against the chart.
"""

from __future__ import annotations

import html

import ipywidgets as widgets

from minislurm.cli.why import wall_clock
from minislurm.lab.figures import LabFigure, gantt
from minislurm.lab.scenario import ScenarioResult, run_scenario
from minislurm.lab.view import View, html_table
from minislurm.lab.whywait import minutes, why_at, why_live, words

MIN = 60.0
ASKED_COLOUR = "#d62728"


class WhyWaiting(View):
    """``source``: a list of :class:`LabJob` (a scenario; default the backfill lab's afternoon)
    or a live terminal.  ``self.result``: (the explanation, the scenario's whole run or None)."""

    def __init__(self, source=None, job=None, *, at: float | None = None, **scenario):
        super().__init__()
        if source is None or isinstance(source, (list, tuple)):
            from minislurm.lab.backfill_view import AFTERNOON
            self.jobs, self.sh, self.scenario = list(source or AFTERNOON), None, scenario
            names = [j.name for j in self.jobs]
            end = run_scenario(self.jobs, **scenario).makespan
            self.job = widgets.Dropdown(options=names, value=job or names[-1], description="job")
            start = at if at is not None else self.jobs[names.index(self.job.value)].submit
            self.minute = widgets.IntSlider(round(start / MIN), min=0, max=max(1, round(end / MIN)),
                                            description="minute", continuous_update=False)
            controls = [self.job, self.minute]
        else:
            self.jobs, self.sh = None, source
            self.job = widgets.BoundedIntText(job or 1, min=1, max=2**31, description="job id")
            self.again = widgets.Button(description="ask again")
            self.again.on_click(lambda _b: self.refresh())
            controls = [self.job, self.again]
        self._observe(self.job, *([self.minute] if self.sh is None else []))
        self.widget = widgets.VBox([widgets.HBox(controls), self.table, self.out])
        self.refresh()

    def compute(self) -> tuple[dict, ScenarioResult | None]:
        if self.sh is not None:
            return why_live(self.sh, self.job.value), None
        return (why_at(self.jobs, self.job.value, self.minute.value * MIN, **self.scenario),
                run_scenario(self.jobs, **self.scenario))

    def draw(self, result) -> LabFigure | None:
        w, run = result
        if run is None:
            return None
        unit, name = (3600.0, "hours") if run.makespan > 6 * 3600 else (MIN, "minutes")
        fig = gantt(run, unit=unit, unit_name=name)
        fig.axes[0].axvline(w["now"] / unit, color=ASKED_COLOUR, linestyle=":", linewidth=2, gid="asked")
        return fig

    def describe(self, result) -> str:
        w, run = result
        text = words(w, scenario=run is not None)
        if run is not None and w["state"] == "PENDING":
            happened = run.runs[w["name"]]
            nodes = ",".join(run.node_names[n] for n in happened.nodes)
            text += (f"What then happened: it started at {minutes(happened.start)} on {nodes} (jobs that end "
                     "before their time limits let it start before the plan's time).\n")
        parts = [f"<pre style='white-space:pre-wrap'>{html.escape(text)}</pre>"]
        if w["state"] == "PENDING":
            when = minutes if run is not None else wall_clock
            rows = [[t["option"], "now" if t["start"] <= w["now"] else when(t["start"]), ",".join(t["nodes"])]
                    for t in w["what_if"]]
            parts.append(html_table(["what if", "it would start", "on"], rows, caption="what-ifs")
                         if rows else "<p>No shorter time limit or other partition starts it sooner.</p>")
        return "".join(parts)


def why_waiting(source=None, job=None, *, at: float | None = None, **scenario) -> WhyWaiting:
    """The widget for ``job`` (a name in a scenario, an id on a live cluster), at ``at`` seconds
    of a scenario (default: when the job is submitted)."""
    return WhyWaiting(source, job, at=at, **scenario)

