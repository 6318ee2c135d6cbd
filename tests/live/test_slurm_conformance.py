"""What a learner types on a real cluster, answered as Slurm 22.05 answers it (issue 12).

Each session of tests/live/sessions.py is replayed on a minislurm cluster built from the twin's
own ``docker/slurm/slurm.conf`` (nodes c1 and c2, partition gpu) and must print exactly what the
real-Slurm twin printed (``sessions/NAME.out``).  tests/docker/test_real_slurm.py runs the same
sessions on the twin itself wherever it runs.
"""

from __future__ import annotations

import pytest

from sessions import CONF, SESSIONS, recorded, run_mini

pytestmark = pytest.mark.live
CLUSTER = {"conf": CONF}


@pytest.mark.parametrize("name", sorted(SESSIONS))
def test_session_prints_what_slurm_printed(live, name):
    live.reset()
    assert run_mini(live, name) == recorded(name)
