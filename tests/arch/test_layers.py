"""The layers of minislurm/ and which may import which (CONTRIBUTING.md draws the same picture).

Every ``import`` in the package counts, also those inside functions: a lazy import is still a
dependency.  A new edge between packages is a design decision: add it to LAYERS with a reason.
"""

from __future__ import annotations

import ast
import re
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "minislurm"

# package (or top-level module) -> what it may import, lowest layers first.
LAYERS: dict[str, set[str]] = {
    "core": set(),                      # the vocabulary: no I/O, no daemons
    "lifecycle": set(),                 # a daemon's stop signal, owned tasks, periodic work
    "client": set(),                    # the commands' way to the controller (plain sockets)
    "common": {"core"},                 # what both daemons share: keys, tokens, settings, RPC
    "sched": {"core"},                  # the policy: pure
    "sim": {"core", "sched"},           # the policy on a SimPy clock
    "train": {"core", "client"},        # what a training job uses inside its allocation
    "ctld": {"core", "sched", "common", "lifecycle"},
    "slurmd": {"core", "common", "lifecycle"},
    # A cluster starts the daemons as processes (python -m minislurm.ctld), and watches the
    # agents' processes and faults (slurmd.proc, slurmd.host).
    "cluster": {"core", "common", "client", "slurmd"},
    "grade": {"core"},
    "cli": {"minislurm", "core", "client", "sched", "sim", "cluster", "grade"},
    "lab": {"core", "sched", "sim", "client", "cluster", "slurmd", "train", "cli"},
    "minislurm": set(),                 # the package's __init__: its version only
}


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """The minislurm modules ``path`` imports, relative imports resolved."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                found.add(".".join(base + ([node.module] if node.module else [])))
            elif node.module:
                found.add(node.module)
    return {m for m in found if m == "minislurm" or m.startswith("minislurm.")}


def import_edges() -> set[tuple[str, str, str]]:
    """(importing layer, imported layer, importing module) for every edge between layers."""
    edges = set()
    for path in PACKAGE.rglob("*.py"):
        source = _module_name(path)
        for target in _imports(path):
            a, b = _layer(source), _layer(target)
            if a != b:
                edges.add((a, b, source))
    return edges


def test_every_layer_is_known():
    layers = {_layer(_module_name(p)) for p in PACKAGE.rglob("*.py")}
    assert layers <= set(LAYERS), f"add these to LAYERS: {sorted(layers - set(LAYERS))}"


def test_the_layers_have_no_cycle():
    try:
        order = list(TopologicalSorter(LAYERS).static_order())
    except CycleError as exc:  # pragma: no cover - a failure message
        raise AssertionError(f"the allowed imports form a cycle: {exc.args[1]}") from None
    assert order.index("core") < order.index("sched") < order.index("ctld")


def test_imports_point_only_down():
    wrong = sorted(f"{module} imports {b} ({a} may import only {sorted(LAYERS.get(a, ()))})"
                   for a, b, module in import_edges() if b not in LAYERS.get(a, set()))
    assert not wrong, "\n".join(wrong)


def test_neither_daemon_imports_the_other():
    crossing = sorted(f"{m} -> {b}" for a, b, m in import_edges() if {a, b} == {"ctld", "slurmd"})
    assert not crossing, crossing


def test_the_controllers_private_members_stay_private():
    """Modules that act on the controller (``f(ctl, ...)``) use its public surface only."""
    reach = sorted(f"{p.relative_to(PACKAGE.parent)}: {m.group(0)}" for p in PACKAGE.rglob("*.py")
                   for m in re.finditer(r"\bctl\._\w+", p.read_text()))
    assert not reach, reach
