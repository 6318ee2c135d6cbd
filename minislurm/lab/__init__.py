"""Lab views: thin ipywidgets front-ends over minislurm's scheduler and simulator.

The models are plain functions (``scenario``, ``queue``, ``replays``, ``packing``,
``srun_model``) that call minislurm's real policy and simulator; the views (``*_view``) only
hold widgets and draw.  Views are imported lazily so the models work without ipywidgets
installed.
"""

from __future__ import annotations

from importlib import import_module

_VIEWS = {
    "BackfillPlayground": "minislurm.lab.backfill_view",
    "PriorityExplorer": "minislurm.lab.priority_view",
    "TraceExplorer": "minislurm.lab.trace_view",
    "FailureExplorer": "minislurm.lab.failure_view",
    "GresPackingExplorer": "minislurm.lab.packing_view",
    "SrunInspector": "minislurm.lab.srun_view",
    "SinfoExplorer": "minislurm.lab.sinfo_view",
    "SbatchExplorer": "minislurm.lab.sbatch_view",
    "WhyWaiting": "minislurm.lab.why_view",
    "why_waiting": "minislurm.lab.why_view",
}

__all__ = sorted(_VIEWS)


def __getattr__(name: str):
    if name in _VIEWS:
        return getattr(import_module(_VIEWS[name]), name)
    raise AttributeError(f"module 'minislurm.lab' has no attribute {name!r}")
