"""The sinfo explorer: set each node's condition, read what ``sinfo`` prints about the cluster.

:func:`sinfo_text` builds a small cluster's state with minislurm's node table (jobs allocated
for ``mix`` and ``alloc``, an admin drain, a node that stopped answering) and prints it with
the real ``sinfo`` formatter (:func:`minislurm.cli.fmt.sinfo.format_partitions`), in any of
its layouts: the default (rows grouped by partition and state), ``-N`` (one row per node),
``-s`` (a summary) and ``-R`` (reasons).  The view draws the nodes coloured by state beside it.
"""

from __future__ import annotations

import html

import ipywidgets as widgets
from matplotlib.patches import Patch, Rectangle

from minislurm.cli.fmt.sinfo import format_partitions
from minislurm.core.cluster import ClusterConfig, NodeConfig, PartitionConfig
from minislurm.core.job import Allocation
from minislurm.core.state import ClusterState
from minislurm.core.views import node_view, partition_view
from minislurm.lab.figures import LabFigure, new_figure
from minislurm.lab.view import View

CONDITIONS = ("idle", "mix", "alloc", "drng", "drain", "down*")
COLOURS = {"idle": "#59a14f", "mix": "#edc948", "alloc": "#f28e2b", "drng": "#b07aa1", "drain": "#bab0ac",
           "down*": "#e15759"}
LAYOUTS = (("sinfo", ""), ("sinfo -N", "-N"), ("sinfo -s", "-s"), ("sinfo -R", "-R"))
DRAIN_REASON = "GPU 3 ECC errors"


def cluster_state(conditions: list[str], *, gpus_per_node: int = 8, cpus_per_node: int = 32,
                  debug_nodes: int = 0) -> ClusterState:
    """Nodes ``gpu01``... in the given conditions; partition ``gpu`` (default) has them all, and
    ``debug`` (30 minutes at most) the first ``debug_nodes``."""
    for c in conditions:
        if c not in CONDITIONS:
            raise ValueError(f"node condition {c!r} is not one of {CONDITIONS}")
    names = [f"gpu{i:02d}" for i in range(1, len(conditions) + 1)]
    parts = [PartitionConfig("gpu", nodes=names, default=True)]
    if debug_nodes:
        parts.append(PartitionConfig("debug", nodes=names[:debug_nodes], max_time=30 * 60.0))
    state = ClusterState(ClusterConfig(
        cluster_name="lab", nodes=[NodeConfig(n, cpus=cpus_per_node, real_memory=256_000, gpus=gpus_per_node,
                                              state="IDLE") for n in names],
        partitions=parts, gres_types={"gpu"}))
    table = state.nodes
    for i, c in enumerate(conditions):
        if c in ("mix", "alloc", "drng"):
            share = 1 if c == "alloc" else 2  # a job on all of the node, or on half of it
            alloc = Allocation((i,), (cpus_per_node // share,), (0,), (tuple(range(gpus_per_node // share)),))
            table.allocate(1000 + i, alloc)
        if c in ("drng", "drain"):
            table.set_drain(i, True, DRAIN_REASON)
        if c == "down*":
            table.set_responding(i, False)
            table.set_down(i, True, "Not responding")
    return state


def sinfo_text(conditions: list[str], flags: str = "", **kw) -> str:
    """What ``sinfo FLAGS`` prints for nodes in ``conditions`` (flags: "", "-N", "-s", "-R")."""
    state = cluster_state(conditions, **kw)
    parts_of = {n: [p.name for p in state.partitions.values() if n in p.nodes] for n in state.nodes.names}
    nodes = [node_view(state, i, parts_of[n]) for i, n in enumerate(state.nodes.names)]
    for n in nodes:
        if n["reason"]:
            n.update(reason_user="root", reason_time=0.0)
    parts = [partition_view(state, p) for p in state.partitions]
    return format_partitions(parts, nodes, node_oriented=flags == "-N", summarize=flags == "-s",
                             list_reasons=flags == "-R")


class SinfoExplorer(View):
    """A condition per node + the sinfo layout -> sinfo's text and a picture of the nodes.

    ``self.nodes`` is the list of per-node dropdowns, ``self.layout`` the sinfo flags buttons,
    ``self.debug`` the "debug partition" box; ``self.result`` the text sinfo prints.
    """

    def __init__(self, conditions: tuple[str, ...] = ("alloc", "alloc", "mix", "idle", "drain", "down*"),
                 *, flags: str = "", debug: bool = False):
        super().__init__()
        self.nodes = [widgets.Dropdown(options=CONDITIONS, value=c, description=f"gpu{i:02d}",
                                       layout=widgets.Layout(width="170px"), style={"description_width": "50px"})
                      for i, c in enumerate(conditions, start=1)]
        self.layout = widgets.ToggleButtons(options=LAYOUTS, value=flags, description="command")
        self.debug = widgets.Checkbox(debug, description="debug partition on gpu01-gpu02 (MaxTime 30:00)",
                                      style={"description_width": "initial"})
        self._observe(*self.nodes, self.layout, self.debug)
        self.widget = widgets.VBox([widgets.HBox(self.nodes[:3]), widgets.HBox(self.nodes[3:]), self.debug,
                                    self.layout, self.out, self.table])
        self.refresh()

    def conditions(self) -> list[str]:
        return [d.value for d in self.nodes]

    def compute(self) -> str:
        return sinfo_text(self.conditions(), self.layout.value, debug_nodes=2 if self.debug.value else 0)

    def draw(self, text: str) -> LabFigure:
        conds = self.conditions()
        fig = new_figure(1.2 + 1.2 * len(conds), 1.9)
        ax = fig.subplots()
        for i, c in enumerate(conds):
            ax.add_patch(Rectangle((i, 0), 0.9, 1, facecolor=COLOURS[c], edgecolor="black", gid=f"node:{i}:{c}"))
            ax.text(i + 0.45, 0.62, f"gpu{i + 1:02d}", ha="center", va="center", fontsize=8, fontweight="bold")
            ax.text(i + 0.45, 0.3, c, ha="center", va="center", fontsize=8)
        ax.set_xlim(-0.05, len(conds))
        ax.set_ylim(0, 1)
        ax.axis("off")
        fig.legend(handles=[Patch(facecolor=COLOURS[c], label=c) for c in CONDITIONS], loc="outside lower center",
                   ncol=len(CONDITIONS), fontsize=7, frameon=False)
        return fig

    def describe(self, text: str) -> str:
        cmd = dict((v, k) for k, v in LAYOUTS)[self.layout.value]
        return f"<pre style='font-size:90%'>$ {html.escape(cmd)}\n{html.escape(text)}</pre>"
