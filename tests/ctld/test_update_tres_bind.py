"""scontrol update JobId=N TresBind=... through the controller's API (tests/ctld/apikit.py):
kept when 22.05's slurmctld would take it (gpu:BIND[;gpu:BIND], empty clears), else refused
with ESLURM_INVALID_TRES's text; it survives a restart (the job's saved state)."""

from __future__ import annotations

import asyncio

from apikit import good_job, serve


def test_tres_bind_update_on_a_pending_job(tmp_path):
    async def check(api):
        job_id = (await api.ok("POST", "/jobs", good_job(), user="alice"))["job_id"]
        await api.ok("POST", f"/jobs/{job_id}/update", {"TresBind": "gpu:closest"}, user="alice")
        assert (await api.ok("GET", f"/jobs/{job_id}"))["tres_bind"] == "gpu:closest"
        for bad in ("closest", "cpu:closest", "gpu:bogus", "gpu:map_gpu:x"):
            status, reply, _ = await api.call("POST", f"/jobs/{job_id}/update", {"TresBind": bad}, user="alice")
            assert (status, reply.get("error")) != (200, None)
            assert reply["error"] == "Invalid Trackable RESource (TRES) specification"
        assert (await api.ok("GET", f"/jobs/{job_id}"))["tres_bind"] == "gpu:closest"
        return job_id

    async def main():
        async with serve(tmp_path) as api:
            job_id = await check(api)
        async with serve(tmp_path) as api:  # a restarted controller reads it back
            assert (await api.ok("GET", f"/jobs/{job_id}"))["tres_bind"] == "gpu:closest"
            await api.ok("POST", f"/jobs/{job_id}/update", {"TresBind": ""}, user="alice")
            assert (await api.ok("GET", f"/jobs/{job_id}"))["tres_bind"] is None
    asyncio.run(main())
