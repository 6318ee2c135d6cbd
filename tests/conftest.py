"""How pytest-xdist shares the suite among its workers (``make test-unit`` runs ``-n 4``).

Each test file is one unit of work that one worker runs whole and in order, so a module's
fixtures (a live cluster, a built image) start once; the files that drive Docker are one unit
together, as they share one engine, its images and the real-Slurm twin.  Units are handed out
longest first, so that the slowest do not start last and keep the whole run waiting.
(xdist's own ``--dist loadgroup`` would do the grouping, but it renames tests in a way that
pytest 9 ignores.)
"""

from __future__ import annotations

DOCKER = ("tests/docker/", "tests/grade/test_docker.py", "tests/cluster/test_docker_config.py")
LONGEST_FIRST = ("docker", "tests/grade/", "tests/live/", "tests/cli/test_sim_cli.py", "tests/lab/")


def unit_of(nodeid: str) -> str:
    path = nodeid.split("::")[0]
    return "docker" if path.startswith(DOCKER) else path


def rank(unit: str) -> int:
    return next((i for i, prefix in enumerate(LONGEST_FIRST) if unit.startswith(prefix)), len(LONGEST_FIRST))


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: rank(unit_of(item.nodeid)))  # stable: a file keeps its own order


def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class ByUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    return ByUnit(config, log)
