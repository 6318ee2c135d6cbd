"""The srun environment inspector: pick -N, -n, --ntasks-per-node and --gres, see every task's ranks.

Each change works out the layout of ``srun OPTIONS python train.py`` on a lab cluster
(:func:`minislurm.lab.srun_model.predict`, no cluster needed) and, with *live* ticked, also runs
the same srun on a real minislurm cluster (the one passed in, or a temporary one started and
stopped around the run), where each task prints what it sees; the table then shows the live
values and says whether they match the prediction.  The figure draws each node's GPUs with the
ranks that would open them as ``cuda:LOCAL_RANK``, and flags the classic mistakes: ranks with
no GPU, GPUs no rank uses, GPUs shared by two ranks.
"""

from __future__ import annotations

import html

import ipywidgets as widgets
from matplotlib.patches import Patch, Rectangle

from minislurm.lab.figures import LabFigure, new_figure
from minislurm.lab.srun_model import SrunLayout, predict, run_live, srun_args, temporary_cluster
from minislurm.lab.view import View, html_table

USED, SHARED, IDLE, OFF, MISSING = "#4e79a7", "#f28e2b", "#edc948", "#e8e8e8", "#d62728"


def _choices(top: int) -> list[tuple[str, int]]:
    return [("not set", 0)] + [(str(i), i) for i in range(1, top + 1)]


def layout_figure(layout: SrunLayout, gpus_per_node: int, *, cluster_nodes: list[str] | None = None,
                  title: str | None = None) -> LabFigure:
    """One row per node: its GPUs, labelled with the ranks whose cuda:LOCAL_RANK they are.

    ``cluster_nodes`` adds the cluster's other nodes, greyed out, so a job that landed on fewer
    nodes than meant shows it."""
    names = list(cluster_nodes or layout.nodes)
    names += [n for n in layout.nodes if n not in names]
    n_nodes = len(names)
    fig = new_figure(2.6 + 1.0 * gpus_per_node + 1.6, 1.3 + 0.75 * n_nodes)
    ax = fig.subplots()
    for row, node in enumerate(names):
        mine = [t for t in layout.tasks if t.node == node]
        users: dict[int, list] = {}
        for t in mine:
            if t.device is not None:
                users.setdefault(t.device, []).append(t)
        allocated = set(layout.gpus.get(node, []))
        for g in range(gpus_per_node):
            ranks = [t.rank for t in users.get(g, [])]
            colour = (SHARED if len(ranks) > 1 else USED) if ranks else IDLE if g in allocated else OFF
            ax.add_patch(Rectangle((g, row - 0.38), 0.92, 0.76, facecolor=colour, edgecolor="black",
                                   linewidth=0.6, hatch="//" if colour == IDLE else None, gid=f"gpu:{node}:{g}"))
            if len(ranks) == 1:
                text = f"rank {ranks[0]}\nLOCAL_RANK {users[g][0].local_rank}"
            else:
                text = "rank " + ",".join(map(str, ranks)) if ranks else ("idle" if g in allocated else "")
            ax.text(g + 0.46, row, text, ha="center", va="center", fontsize=7,
                    color="white" if ranks else "black", fontweight="bold" if ranks else "normal")
        lost = [t.rank for t in mine if t.device is None and allocated]
        if lost:
            ax.add_patch(Rectangle((gpus_per_node + 0.1, row - 0.38), 1.5, 0.76, facecolor="white",
                                   edgecolor=MISSING, linewidth=1.5, gid=f"nogpu:{node}"))
            ax.text(gpus_per_node + 0.85, row, "no GPU:\nrank " + ",".join(map(str, lost)), ha="center",
                    va="center", fontsize=7, color=MISSING)
    ax.set_xlim(-0.1, gpus_per_node + 1.7)
    ax.set_ylim(n_nodes - 0.5, -0.5)
    ax.set_yticks(range(n_nodes), [f"{n}\nSLURM_NODEID={layout.nodes.index(n)}" if n in layout.nodes
                                   else f"{n}\nnot in this step" for n in names], fontsize=7)
    ax.set_xticks([g + 0.46 for g in range(gpus_per_node)], [f"GPU {g}" for g in range(gpus_per_node)], fontsize=7)
    ax.tick_params(length=0)
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    handles = [Patch(facecolor=USED, label="opened by one rank"), Patch(facecolor=SHARED, label="shared"),
               Patch(facecolor=IDLE, hatch="//", label="allocated, unused"),
               Patch(facecolor=OFF, label="not allocated")]
    fig.legend(handles=handles, loc="outside lower center", ncol=4, fontsize=7, frameon=False)
    ax.set_title(title or f"srun {' '.join(layout.argv)}  ->  {len(layout.tasks)} tasks, "
                          f"SLURM_TASKS_PER_NODE={layout.tasks_per_node}", fontsize=9)
    return fig


class SrunInspector(View):
    """srun options -> the rank/node/GPU layout of every task, predicted (and optionally live).

    Controls: ``self.nodes`` (-N), ``self.ntasks`` (-n), ``self.per_node`` (--ntasks-per-node),
    ``self.gres`` (--gres=gpu:N), ``self.per_task`` (--gpus-per-task), ``self.live``.
    ``self.result`` is the layout shown (live when ticked), ``self.predicted`` the model's,
    ``self.measured`` the live one or None, ``self.match`` whether they agree (None if not live).
    """

    def __init__(self, *, nodes: int = 2, ntasks: int = 0, ntasks_per_node: int = 4, gres: int = 4,
                 gpus_per_task: int = 0, cluster_nodes: int = 2, gpus_per_node: int = 4,
                 live: bool = False, cluster=None):
        super().__init__()
        self.cluster_nodes, self.gpus_per_node, self.cluster = cluster_nodes, gpus_per_node, cluster
        style = {"description_width": "150px"}
        self.nodes = widgets.Dropdown(options=_choices(cluster_nodes + 1), value=nodes, description="-N, --nodes",
                                      style=style)
        self.ntasks = widgets.Dropdown(options=_choices(4 * gpus_per_node * cluster_nodes), value=ntasks,
                                       description="-n, --ntasks", style=style)
        self.per_node = widgets.Dropdown(options=_choices(2 * gpus_per_node), value=ntasks_per_node,
                                         description="--ntasks-per-node", style=style)
        self.gres = widgets.Dropdown(options=_choices(gpus_per_node), value=gres, description="--gres=gpu:",
                                     style=style)
        self.per_task = widgets.Dropdown(options=_choices(2), value=gpus_per_task, description="--gpus-per-task",
                                         style=style)
        self.live = widgets.Checkbox(live, description="also run it on a live minislurm cluster",
                                     style={"description_width": "initial"})
        self.command = widgets.HTML()
        self.predicted: SrunLayout | None = None
        self.measured: SrunLayout | None = None
        self.match: bool | None = None
        self._observe(self.nodes, self.ntasks, self.per_node, self.gres, self.per_task, self.live)
        controls = widgets.HBox([widgets.VBox([self.nodes, self.ntasks, self.per_node]),
                                 widgets.VBox([self.gres, self.per_task, self.live])])
        self.widget = widgets.VBox([controls, self.command, self.out, self.table])
        self.refresh()

    def args(self) -> list[str]:
        return srun_args(self.nodes.value, self.ntasks.value, self.per_node.value, self.gres.value,
                         self.per_task.value)

    def compute(self) -> SrunLayout:
        args = self.args()
        self.command.value = f"<code>$ srun {html.escape(' '.join(args))} python train.py</code>"
        self.predicted, self.measured, self.match = None, None, None
        self.predicted = predict(args, nodes=self.cluster_nodes, gpus_per_node=self.gpus_per_node)
        if not self.live.value:
            return self.predicted
        if self.cluster is not None:
            self.measured = run_live(self.cluster, args)
        else:
            with temporary_cluster(self.cluster_nodes, self.gpus_per_node) as cluster:
                self.measured = run_live(cluster, args)
        self.match = (len(self.measured.tasks) == len(self.predicted.tasks)
                      and all(a.same_as(b) for a, b in zip(self.measured.tasks, self.predicted.tasks)))
        return self.measured

    def draw(self, layout: SrunLayout) -> LabFigure:
        names = [f"gpu{i:02d}" for i in range(1, self.cluster_nodes + 1)]  # LocalCluster's names
        return layout_figure(layout, self.gpus_per_node, cluster_nodes=names)

    def describe(self, layout: SrunLayout) -> str:
        rows = [[t.node, t.nodeid, t.procid, t.localid, ",".join(map(str, t.visible)) or "(unset)", t.rank,
                 t.local_rank, t.world_size, "-" if not t.visible else (t.device if t.device is not None else "none!")]
                for t in layout.tasks]
        first = layout.tasks[0]
        source = ("live: every task reported its own environment; "
                  + ("it matches the prediction" if self.match else "it DIFFERS from the prediction")
                  if self.measured is not None else "predicted by minislurm's layout and environment code")
        table = html_table(["node", "NODEID", "PROCID", "LOCALID", "CUDA_VISIBLE_DEVICES", "RANK", "LOCAL_RANK",
                            "WORLD_SIZE", "GPU opened"], rows, caption=source)
        problems = layout.problems()
        items = "".join(f"<li>{html.escape(p)}</li>" for p in problems) or "<li>one rank per GPU: good</li>"
        return (f"<div style='overflow-x:auto'>{table}</div><p style='font-size:90%'>NODEID, PROCID and LOCALID "
                f"are SLURM_NODEID, SLURM_PROCID and SLURM_LOCALID; every task gets MASTER_ADDR="
                f"{html.escape(first.master_addr)}, MASTER_PORT={first.master_port}; the GPU a rank opens is "
                f"cuda:LOCAL_RANK.</p><ul style='font-size:90%'>{items}</ul>")
