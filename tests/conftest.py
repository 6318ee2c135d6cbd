"""How pytest-xdist shares the suite among its workers (``make test-unit`` runs ``-n 3``).

Each test file is one unit of work that one worker runs whole and in order, so a module's
fixtures (a live cluster, a built image) start once.  The files that drive the Docker cluster
and the real-Slurm twin are one unit (the swarm test would cut the twin's name service), and
the grading ones that build and run the grader image another.  Units are handed out longest
first, so that the slowest do not start last and keep the whole run waiting.  (xdist's own
``--dist loadgroup`` would do the grouping, but it renames tests in a way pytest 9 ignores.)
"""

from __future__ import annotations

import pytest


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "daemons: starts real daemons, containers or notebook kernels; "
        "`make test-fast` runs everything else (-m 'not daemons')")

UNITS = {"tests/docker/": "docker cluster and twin",
         "tests/grade/test_docker.py": "grader image", "tests/cluster/test_docker_config.py": "grader image"}
LONGEST_FIRST = ("docker cluster", "grader image", "tests/grade/", "tests/live/", "tests/cli/test_sim_cli.py",
                 "tests/lab/")


def unit_of(nodeid: str) -> str:
    path = nodeid.split("::")[0]
    return next((unit for prefix, unit in UNITS.items() if path.startswith(prefix)), path)


def rank(unit: str) -> int:
    return next((i for i, prefix in enumerate(LONGEST_FIRST) if unit.startswith(prefix)), len(LONGEST_FIRST))


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: rank(unit_of(item.nodeid)))  # stable: a file keeps its own order


@pytest.hookimpl(optionalhook=True)  # a hook of xdist's, absent with -p no:xdist
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class ByUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    return ByUnit(config, log)
