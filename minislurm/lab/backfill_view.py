"""The backfill playground: edit a few jobs and the policy, watch the scheduler's Gantt chart.

Each job is a row of number boxes (submit, nodes, GPUs per node, time limit, run time, all in
minutes); the policy is conservative (what Slurm's sched/backfill does), EASY, or FIFO (no
backfill).  Every change re-plays the jobs through :func:`minislurm.lab.scenario.run_scenario`,
which asks minislurm's real scheduler what starts, and redraws the chart.
"""

from __future__ import annotations

import ipywidgets as widgets

from minislurm.lab.figures import LabFigure, gantt
from minislurm.lab.scenario import LabJob, ScenarioResult, run_scenario
from minislurm.lab.view import View, html_table

MIN = 60.0

#: An AI team's afternoon on two 4-GPU nodes: a fine-tune and a sweep are running, a big
#: pre-training job needs both nodes, and two evaluation jobs arrive behind it.
AFTERNOON = [
    LabJob("finetune", submit=0, nodes=1, gpus=4, limit=180 * MIN, runtime=120 * MIN),
    LabJob("sweep", submit=0, nodes=1, gpus=2, limit=60 * MIN),
    LabJob("pretrain", submit=5 * MIN, nodes=2, gpus=4, limit=720 * MIN, runtime=600 * MIN),
    LabJob("eval", submit=10 * MIN, nodes=1, gpus=2, limit=30 * MIN),
    LabJob("eval-long", submit=15 * MIN, nodes=1, gpus=2, limit=240 * MIN, runtime=180 * MIN),
]

POLICY_OPTIONS = [("conservative (Slurm)", "conservative"), ("EASY", "easy"), ("FIFO, no backfill", "fifo")]
FIELDS = ("submit", "nodes", "gpus", "limit", "runtime")


def _fmt_min(seconds: float) -> str:
    m = int(round(seconds / MIN))
    return f"{m // 60}:{m % 60:02d}"


class BackfillPlayground(View):
    """Jobs table + policy -> minislurm's schedule() through time -> Gantt chart and table.

    ``self.controls[name][field]`` is the number box for a job's field (minutes, or counts);
    ``self.policy`` the policy buttons; ``self.result`` the latest :class:`ScenarioResult`.
    """

    def __init__(self, jobs: list[LabJob] | None = None, *, nodes: int = 2, gpus_per_node: int = 4,
                 policy: str = "conservative", max_minutes: int = 7 * 24 * 60):
        super().__init__()
        self.nodes, self.gpus_per_node = nodes, gpus_per_node
        self.names = [j.name for j in (jobs or AFTERNOON)]
        self.users = {j.name: j.user for j in (jobs or AFTERNOON)}
        self.policy = widgets.ToggleButtons(options=POLICY_OPTIONS, value=policy, description="policy",
                                            style={"button_width": "150px"})
        self.controls: dict[str, dict[str, widgets.BoundedIntText]] = {}
        small = widgets.Layout(width="75px")
        cells: list[widgets.Widget] = [widgets.HTML(f"<b>{h}</b>") for h in
                                       ("job", "submit (min)", "nodes", "GPUs/node", "limit (min)", "runtime (min)")]
        for job in jobs or AFTERNOON:
            row = {
                "submit": widgets.BoundedIntText(round(job.submit / MIN), min=0, max=max_minutes, layout=small),
                "nodes": widgets.BoundedIntText(job.nodes, min=1, max=nodes, layout=small),
                "gpus": widgets.BoundedIntText(job.gpus, min=1, max=gpus_per_node, layout=small),
                "limit": widgets.BoundedIntText(round(job.limit / MIN), min=1, max=max_minutes, layout=small),
                "runtime": widgets.BoundedIntText(round(job.work / MIN), min=1, max=max_minutes, layout=small),
            }
            self.controls[job.name] = row
            cells += [widgets.Label(job.name)] + [row[f] for f in FIELDS]
            self._observe(*row.values())
        self._observe(self.policy)
        grid = widgets.GridBox(cells, layout=widgets.Layout(grid_template_columns="repeat(6, max-content)",
                                                            grid_gap="2px 10px"))
        self.widget = widgets.VBox([self.policy, grid, self.out, self.table])
        self.refresh()

    def jobs(self) -> list[LabJob]:
        """The jobs as the controls now describe them (seconds)."""
        out = []
        for name in self.names:
            v = {f: self.controls[name][f].value for f in FIELDS}
            out.append(LabJob(name, submit=v["submit"] * MIN, nodes=v["nodes"], gpus=v["gpus"],
                              limit=v["limit"] * MIN, runtime=v["runtime"] * MIN, user=self.users[name]))
        return out

    def compute(self) -> ScenarioResult:
        return run_scenario(self.jobs(), nodes=self.nodes, gpus_per_node=self.gpus_per_node,
                            policy=self.policy.value)

    def draw(self, result: ScenarioResult) -> LabFigure:
        span = max(result.makespan, 1.0)
        unit, name = (3600.0, "hours") if span > 6 * 3600 else (MIN, "minutes")
        return gantt(result, unit=unit, unit_name=name)

    def describe(self, result: ScenarioResult) -> str:
        rows = []
        for job in result.jobs:
            run = result.runs[job.name]
            promise = result.first_promise(job.name)
            how = "backfill" if run.backfilled else "main scheduler"
            rows.append([job.name, f"{job.nodes}x{job.gpus}", _fmt_min(job.limit), _fmt_min(run.start),
                         _fmt_min(run.start - job.submit), how,
                         _fmt_min(promise.start) if promise else "-", result.reasons.get(job.name, "-"),
                         run.state])
        header = ["job", "nodes x GPUs", "limit", "start", "wait", "started by", "first promise",
                  "first reason", "state"]
        mean = _fmt_min(result.mean_wait)
        return html_table(header, rows, caption=f"{result.policy}: mean wait {mean} (h:mm), "
                                                f"all done at {_fmt_min(result.makespan)}")
