"""A job's user must be one its nodes know (issue 21, item 8): on a cluster whose agents run
jobs as their users, the controller refuses anyone else's submission with Slurm's "Invalid user
id" rather than send a node a job it cannot run (and drain it for everyone)."""

from __future__ import annotations

import asyncio
import os
import pwd

import pytest
from apikit import good_job, serve


def _ghost() -> str:
    """A name no host has (tests never depend on the host's users)."""
    name = "ghost" + os.urandom(5).hex()
    with pytest.raises(KeyError):
        pwd.getpwnam(name)
    return name


def test_a_user_this_host_does_not_know_cannot_submit(tmp_path):
    ghost, me = _ghost(), pwd.getpwuid(os.getuid()).pw_name

    async def main():
        async with serve(tmp_path, check_users=True) as api:
            api.tokens[ghost] = api.ctl.signer.user_token(ghost, 3600)
            api.tokens[me] = api.ctl.signer.user_token(me, 3600)
            first = api.ctl.state.next_job_id
            for path, body in (("/jobs", good_job()), ("/jobs", good_job(test_only=True))):
                status, reply, _ = await api.call("POST", path, body, user=ghost)
                assert (status, reply) == (400, {"error": "Invalid user id"}), path
            assert api.ctl.state.next_job_id == first and not api.ctl.state.jobs  # no id used, nothing kept
            reply = await api.ok("POST", "/jobs", good_job(), user=me)
            assert api.ctl.state.jobs[reply["job_id"]].user == me
    asyncio.run(main())


def test_a_personal_cluster_takes_any_name(tmp_path):
    """Its agents run every job as the cluster's owner: the name is only a label there."""
    ghost = _ghost()

    async def main():
        async with serve(tmp_path) as api:
            api.tokens[ghost] = api.ctl.signer.user_token(ghost, 3600)
            reply = await api.ok("POST", "/jobs", good_job(), user=ghost)
            assert api.ctl.state.jobs[reply["job_id"]].user == ghost
    asyncio.run(main())
