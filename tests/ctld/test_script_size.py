"""SchedulerParameters=max_script_size (issue 21, item 7): the controller refuses a batch script
of more bytes than that, as slurmctld does (ESLURM_PATHNAME_TOO_LONG), using no job id."""

from __future__ import annotations

import asyncio

from apikit import good_job, serve

TOO_LONG = "Pathname of a file, directory or other parameter too long"


def test_a_script_over_max_script_size_is_refused(tmp_path):
    async def main():
        async with serve(tmp_path) as api:
            api.ctl.config.sched.max_script_size = 100  # as SchedulerParameters=max_script_size=100 sets it
            first = api.ctl.state.next_job_id
            over = [good_job(), good_job(test_only=True)]
            for body in over:
                body["script"] = "#!/bin/sh\n" + "#" * 90 + "\n"  # 101 bytes
            nine_bytes_more = good_job()
            nine_bytes_more["script"] = "#!/bin/sh\n" + "é" * 45 + "\n"  # 56 characters, 101 bytes
            for body in (*over, nine_bytes_more):
                status, reply, _ = await api.call("POST", "/jobs", body)
                assert (status, reply) == (400, {"error": TOO_LONG})
            assert api.ctl.state.next_job_id == first and not api.ctl.state.jobs
            fits = good_job()
            fits["script"] = "#!/bin/sh\n" + "#" * 89 + "\n"  # 100 bytes
            await api.ok("POST", "/jobs", fits)
    asyncio.run(main())
