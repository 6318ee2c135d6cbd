"""The priority explorer: move the PriorityWeight* sliders, watch the queue re-order.

Sliders are slurm.conf settings (PriorityWeightAge, PriorityWeightFairshare,
PriorityWeightJobSize, PriorityDecayHalfLife, PriorityFavorSmall, Fair Tree or classic fair
share).  Each change re-ranks the queue with :func:`minislurm.lab.queue.rank` and redraws one
stacked bar per job (its weighted factors, the way ``sprio`` splits a priority), top bar first
in line.
"""

from __future__ import annotations

from dataclasses import replace

import ipywidgets as widgets

from minislurm.lab.figures import LabFigure, new_figure
from minislurm.lab.queue import HISTORY, QUEUE, QueuedJob, Ranked, Usage, Weights, rank
from minislurm.lab.view import View, html_table

FACTORS = [("age", "age", "#4e79a7"), ("fairshare", "fair share", "#59a14f"),
           ("jobsize", "job size", "#f28e2b"), ("part", "partition", "#b07aa1")]


class PriorityExplorer(View):
    """Weights -> priority/multifactor on a small queue -> stacked factor bars and an sprio-like table.

    ``self.weights`` maps a Weights field name to its slider; ``self.result`` is a
    :class:`~minislurm.lab.queue.Ranked`; ``self.current()`` the Weights the sliders describe.
    """

    def __init__(self, queue: list[QueuedJob] | None = None, history: list[Usage] | None = None,
                 weights: Weights = Weights()):
        super().__init__()
        self.queue = list(queue or QUEUE)
        self.history = list(history or HISTORY)
        style = {"description_width": "190px"}
        layout = widgets.Layout(width="520px")

        def slider(name: str, label: str) -> widgets.IntSlider:
            return widgets.IntSlider(getattr(weights, name), min=0, max=10000, step=250, description=label,
                                     continuous_update=False, style=style, layout=layout)

        self.weights = {
            "age": slider("age", "PriorityWeightAge"),
            "fairshare": slider("fairshare", "PriorityWeightFairshare"),
            "jobsize": slider("jobsize", "PriorityWeightJobSize"),
            "half_life_days": widgets.FloatSlider(weights.half_life_days, min=0.5, max=28, step=0.5,
                                                  description="PriorityDecayHalfLife (days)",
                                                  continuous_update=False, style=style, layout=layout),
            "favor_small": widgets.Checkbox(weights.favor_small, description="PriorityFavorSmall=YES",
                                            indent=False),
            "fair_tree": widgets.ToggleButtons(options=[("Fair Tree (default)", True),
                                                        ("classic (NO_FAIR_TREE)", False)],
                                               value=weights.fair_tree, style={"button_width": "190px"}),
        }
        self._base = weights
        self._observe(*self.weights.values())
        controls = widgets.VBox(list(self.weights.values()))
        self.widget = widgets.VBox([controls, self.out, self.table])
        self.refresh()

    def current(self) -> Weights:
        return replace(self._base, **{k: w.value for k, w in self.weights.items()})

    def compute(self) -> Ranked:
        return rank(self.queue, self.current(), self.history)

    def draw(self, result: Ranked) -> LabFigure:
        fig = new_figure(8.0, 0.9 + 0.55 * len(result.order))
        ax = fig.subplots()
        seen: set[str] = set()
        for y, name in enumerate(result.order):
            f = result.factors[name]
            left = 0.0
            for attr, label, colour in FACTORS:
                value = getattr(f, attr)
                if value > 0:
                    ax.barh(y, value, left=left, color=colour, edgecolor="white",
                            label=None if label in seen else label, gid=f"{attr}:{name}")
                    seen.add(label)
                    left += value
            ax.text(left, y, f"  {f.priority}", va="center", fontsize=8)
        ax.set_yticks(range(len(result.order)))
        ax.set_yticklabels([f"{i + 1}. {n} ({result.factors[n].user})" for i, n in enumerate(result.order)],
                           fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("priority = sum of weighted factors")
        handles, labels = ax.get_legend_handles_labels()
        if handles:
            ax.legend(handles, labels, loc="lower right", fontsize=7)
        ax.set_xlim(0, max([result.priority(n) for n in result.order] + [1]) * 1.18)
        ax.set_title("the queue in the order the scheduler tries it (first at the top)", fontsize=10)
        return fig

    def describe(self, result: Ranked) -> str:
        jobs = {q.name: q for q in self.queue}
        rows = [[i + 1, n, result.factors[n].user, result.factors[n].account,
                 f"{jobs[n].nodes}x{jobs[n].gpus}", jobs[n].waited_h, result.priority(n),
                 round(result.factors[n].age), round(result.factors[n].fairshare),
                 round(result.factors[n].jobsize)] for i, n in enumerate(result.order)]
        queue = html_table(["#", "job", "user", "account", "nodes x GPUs", "waited (h)", "PRIORITY",
                            "AGE", "FAIRSHARE", "JOBSIZE"], rows, caption="like sprio -l, in scheduling order")
        fs_rows = [[k[0], k[1], round(result.usage[k], 1), round(v, 3)]
                   for k, v in sorted(result.fairshare.items(), key=lambda kv: -kv[1])]
        share = html_table(["account", "user", "decayed usage (GPU-h)", "fair-share factor"], fs_rows,
                           caption="like sshare: usage after decay, and the factor it gives")
        return queue + "<br>" + share
