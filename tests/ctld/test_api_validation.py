"""The API's validation edge, each named defect of issue 9 (item 8) reproduced in-process: a real
Controller behind the real aiohttp app (tests/ctld/apikit.py), no agents.

Every bad request is answered 4xx with Slurm's text naming the field, changes nothing (no job,
no job id used, no half-applied reservation), and leaves the lists every user reads and the
scheduler's passes working.  A bug in a handler is a logged 500 with a request id.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import asdict

import pytest
from apikit import good_job, serve

from minislurm.core.states import Reason

MAX_BODY = 8 * 1024 * 1024  # minislurm.ctld.schema.MAX_BODY (written out: this file also runs on old code)


def run(tmp_path, body, **config):
    async def main():
        async with serve(tmp_path, **config) as api:
            await body(api)
    asyncio.run(main())


def _with(**top) -> dict:
    job = good_job()
    job.update(top)
    return job


# (request body, status, error text) for POST /jobs.  The Slurm texts are slurm_strerror()'s.
BAD_SUBMISSIONS = [
    (good_job(begin="x"), "Invalid time specified: spec.begin expected a number or null"),
    (_with(stdout=5), "Invalid value for stdout: expected a string"),
    (good_job(job_name={}), "Invalid value for spec.job_name: expected a string or null"),
    (good_job(time_limit_min="x"), "Requested time limit is invalid (missing or exceeds some limit): "
                                   "spec.time_limit_min expected a number of minutes above 0 "
                                   "(at most 4294967294) or INFINITE"),
    (_with(environment={"A": 5}), "Invalid value for environment.A: expected a string"),
    (_with(environment={"A=B": "1"}), "Invalid value for environment: invalid name 'A=B' "
                                             "(expected a variable name without '=' or NUL)"),
    (_with(argv=["a\x00b"]), "Invalid value for argv.0: expected text without NUL characters"),
    (good_job(nodes_min=-1), "Node count specification invalid: spec.nodes_min must be at least 0"),
    (good_job(ntasks=0), "Task count specification invalid: spec.ntasks must be at least 1"),
    (good_job(cpus_per_task=-4), "Invalid value for spec.cpus_per_task: must be at least 1"),
    (good_job(ntasks=10**30), "Task count specification invalid: spec.ntasks must be at most 2147483647"),
    (good_job(mem_mb=2**70), "Invalid value for spec.mem_mb: must be at most 1099511627776"),
    (good_job(nodes_min=2.0), "Node count specification invalid: spec.nodes_min expected an integer or null"),
    (good_job(gpus=["a100", "4"]), "Invalid generic resource (gres) specification: spec.gpus.1 expected an integer"),
    (good_job(gpus_per_node=[None, 2, 3]), "Invalid generic resource (gres) specification: "
                                           "spec.gpus_per_node expected [type or null, count]"),
    (good_job(gres=[["gpu", None, "x"]]), "Invalid generic resource (gres) specification: "
                                          "spec.gres.0.2 expected an integer"),
    (good_job(gres="gpu:2"), "Invalid generic resource (gres) specification: spec.gres expected a list or null"),
    (good_job(array={"indices": [0, 5000]}), "Invalid job array specification: spec.array.indices.1 "
                                             "must be at most 1000"),
    (good_job(signal=["USR1"]), "Invalid value for spec.signal.0: expected an integer"),
    (good_job(dependency={"terms": [["afterok", ["1"]]]}), "Job dependency problem: "
                                                          "spec.dependency.terms.0.1.0 expected an integer"),
    (good_job(nodelist="gpu01"), "Invalid node name specified: spec.nodelist expected a list or null"),
    (good_job(partition="gpu\x00"), "Invalid partition name specified: spec.partition expected text "
                                    "without NUL characters"),
    (good_job(partition="gpu\n"), "Invalid partition name specified"),  # Slurm's answer: no such partition
    (good_job(job_name="INFINITE", begin=float(2**40)), "Invalid time specified: spec.begin must be at most "
                                                        "4294967295"),
    (good_job(no_such_option=1), "Unknown field: spec.no_such_option"),
    (_with(uid=-1), "Invalid user id: uid must be at least 0"),
    ({"script": "x"}, "Missing field: spec"),
    ([1, 2], "Invalid value for body: expected an object"),
]


@pytest.mark.parametrize("body,message", BAD_SUBMISSIONS, ids=[m.split(":")[0][:30] + str(i)
                                                                 for i, (_, m) in enumerate(BAD_SUBMISSIONS)])
def test_a_bad_submission_is_refused_and_changes_nothing(tmp_path, body, message):
    async def check(api):
        first = await api.ok("POST", "/jobs", good_job())
        status, reply, _ = await api.call("POST", "/jobs", body, user="alice")
        assert (status, reply) == (400, {"error": message})
        assert list(api.ctl.state.jobs) == [first["job_id"]] and api.ctl.state.next_job_id == 2
        api.ctl.run_pass(backfill=True)
        await api.lists_work()
        assert (await api.ok("POST", "/jobs", good_job(), user="alice"))["job_id"] == 2
    run(tmp_path, check)


RAW_BODIES = [
    (b"[" * 100_000 + b"]" * 100_000, "Malformed request: JSON nested deeper than 32 levels"),
    (b'{"spec": ' + b'{"a": ' * 40 + b"1" + b"}" * 41, "Malformed request: JSON nested deeper than 32 levels"),
    (b'{"spec": {"begin": NaN}}', "Malformed request: invalid JSON (NaN is not a JSON number)"),
    (b'{"spec": {"time_limit_min": Infinity}}', "Malformed request: invalid JSON (Infinity is not a JSON number)"),
    (b'{"spec": {}, "uid": ' + b"9" * 5000 + b"}", None),
    (b"{not json", None),
    (b"\xff\xfe{}", "Malformed request: the body is not UTF-8 text"),
]


@pytest.mark.parametrize("raw,message", RAW_BODIES, ids=range(len(RAW_BODIES)))
def test_malformed_json_is_a_400(tmp_path, raw, message):
    async def check(api):
        status, reply, _ = await api.call("POST", "/jobs", raw=raw)
        assert status == 400 and reply["error"].startswith(message or "Malformed request: invalid JSON"), reply
        assert not api.ctl.state.jobs
        await api.lists_work()
    run(tmp_path, check)


def test_a_body_over_the_limit_is_a_413(tmp_path):
    async def check(api):
        status, reply, _ = await api.call("POST", "/jobs", raw=b" " * (MAX_BODY + 1))
        assert (status, reply) == (413, {"error": f"Request too large (at most {MAX_BODY} bytes)"})
        script = "#!/bin/sh\n" + "#" * (4 * 1024 * 1024)  # Slurm's max_script_size, plus the shebang
        status, reply, _ = await api.call("POST", "/jobs", dict(good_job(), script=script))
        assert (status, reply["error"]) == (400, "Pathname of a file, directory or other parameter too long: "
                                                 "script too long (at most 4194304 characters)")
    run(tmp_path, check)


def test_time_limit_x_no_longer_breaks_scheduling_passes(tmp_path, caplog):
    """The issue's case: ``time_limit_min: "x"`` made every scheduling pass raise (and so ended
    the backfill loop).  Refused now: the passes that follow raise nothing and keep giving the
    queue its reasons."""
    async def check(api):
        caplog.set_level(logging.ERROR)
        for bad in (good_job(time_limit_min="x"), good_job(begin="x"), good_job(time_limit_min=[1]),
                    good_job(nice="5"), good_job(array={"indices": "0-3"})):
            assert (await api.call("POST", "/jobs", bad))[0] == 400
        held = (await api.ok("POST", "/jobs", good_job(hold=True)))["job_id"]
        waiting = (await api.ok("POST", "/jobs", good_job()))["job_id"]
        await asyncio.sleep(2.5)  # bf_interval is 1 s: two backfill passes, and main passes
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text  # no pass raised
        jobs = api.ctl.state.jobs
        assert jobs[held].reason == Reason.HELD_USER and jobs[waiting].reason != Reason.NONE
        assert jobs[waiting].time_limit == 600 and list(jobs) == [held, waiting]
    run(tmp_path, check)


def test_query_and_path_parameters(tmp_path):
    async def check(api):
        await api.ok("POST", "/jobs", good_job())
        cases = [("/jobs", {"ids": "x,y"}, 400, "Invalid job id specified: ids.0 expected an integer"),
                 ("/jobs", {"ids": str(2**40)}, 400, "Invalid job id specified: ids.0 must be at most 4294967294"),
                 ("/jobs", {"nosuch": "1"}, 400, "Unknown query parameter: nosuch"),
                 ("/acct", {"jobs": str(2**70)}, 400, "Invalid job id specified: jobs.0 must be at most 4294967294"),
                 ("/acct", {"jobs": ",".join(["1"] * 2000)}, 400, "Invalid job id specified: jobs too many items "
                                                                  "(at most 1000)"),
                 ("/acct", {"since": "nan"}, 400, "Invalid value for since: expected a number"),
                 ("/jobs/abc", None, 404, "Invalid job id specified"),
                 ("/jobs/" + "9" * 30, None, 404, "Invalid job id specified"),
                 ("/jobs/-1", None, 404, "Invalid job id specified"),
                 ("/jobs/1/wait", {"timeout": "1e309"}, 400, "Invalid value for timeout: expected a number"),
                 ("/jobs/1/wait", {"timeout": "301"}, 400, "Invalid value for timeout: must be at most 300"),
                 ("/jobs/1/wait", {"until": "never"}, 400, "Invalid value for until: expected start or end")]
        for path, params, status, message in cases:
            assert (await api.call("GET", path, params=params))[:2] == (status, {"error": message}), path
        assert (await api.ok("GET", "/jobs", params={"ids": "1,2", "user": "root,alice"}))["jobs"][0]["job_id"] == 1
        assert len((await api.ok("GET", "/acct", params={"jobs": "1", "duplicates": "1"}))["records"]) == 1
        assert (await api.ok("GET", "/jobs/1/wait", params={"timeout": "0.01"}))["state"] == "PENDING"
    run(tmp_path, check)


def test_other_routes_check_their_bodies(tmp_path):
    async def check(api):
        job = (await api.ok("POST", "/jobs", good_job()))["job_id"]
        cases = [("POST", f"/jobs/{job}/cancel", {"uid": "root"}, "Invalid user id: uid expected an integer"),
                 ("POST", f"/jobs/{job}/cancel", {"signal": 99, "target": "all"},
                  "Invalid value for signal: must be at most 64"),
                 ("POST", f"/jobs/{job}/hold", {"kind": "forever"}, "Invalid value for kind: expected user or admin"),
                 ("POST", f"/jobs/{job}/update", {"Nice": "x"},
                  "Invalid nice value, must be between -2147483645 and 2147483645"),
                 ("POST", f"/jobs/{job}/update", {"Nice": 5}, "Invalid value for Nice: expected a string"),
                 ("POST", f"/jobs/{job}/update", {"TimeLimit": "9" * 400},
                  "Requested time limit is invalid (missing or exceeds some limit)"),
                 ("POST", f"/jobs/{job}/steps", {"ntasks": "4"},
                  "Task count specification invalid: ntasks expected an integer or null"),
                 ("POST", f"/jobs/{job}/steps/0/complete", {"exit_code": 300},
                  "Invalid value for exit_code: must be at most 255"),
                 ("POST", "/nodes/update", {"state": "DOWN"}, "Missing field: names"),
                 ("POST", "/nodes/update", {"names": "gpu01"},
                  "Invalid node name specified: names expected a list"),
                 ("POST", "/token", {"lifespan": [60]},
                  "Invalid value for lifespan: expected a number of seconds (1 to 2147483647)"),
                 ("POST", "/token", {"lifespan": "-5"},
                  "Invalid value for lifespan: expected a number of seconds (1 to 2147483647)"),
                 ("POST", f"/jobs/{job}/release", {"now": True}, "Unknown field: now")]
        for method, path, body, message in cases:
            assert (await api.call(method, path, body))[:2] == (400, {"error": message}), (path, body)
        assert api.ctl.state.jobs[job].nice == 0 and api.ctl.state.jobs[job].state.name == "PENDING"
        await api.ok("POST", f"/jobs/{job}/update", {"Nice": "10", "TimeLimit": "30"})
        assert (api.ctl.state.jobs[job].nice, api.ctl.state.jobs[job].time_limit) == (10, 1800)
        assert (await api.ok("POST", "/token", {"username": "alice", "lifespan": "60"}))["user"] == "alice"
    run(tmp_path, check)


def test_reservations_take_finite_times_and_a_refused_update_leaves_no_trace(tmp_path):
    async def check(api):
        status, reply, _ = await api.call("POST", "/reservations", {"nodes": "gpu01", "start": "nan",
                                                                     "users": "alice"})
        assert (status, reply) == (400, {"error": "Invalid time specified: start expected a number or null"})
        for bad in ({"nodes": "gpu01", "duration": "inf", "users": "alice"},
                    {"nodes": "gpu[01-99999999]", "users": "alice"}, {"nodes": 5, "users": "alice"},
                    {"nodes": "gpu01", "users": "a b"}, {"nodes": "gpu01", "users": "alice", "name": "x/y"}):
            assert (await api.call("POST", "/reservations", bad))[0] == 400, bad
        assert not api.ctl.state.reservations
        now = api.ctl.clock()
        await api.ok("POST", "/reservations", {"name": "train", "nodes": "gpu01", "start": now + 60,
                                               "duration": 3600, "users": "root"})
        before = api.ctl.state.reservations["train"]
        saved = asdict(before)
        # once half-applied: the nodes changed, then the duration failed and the nodes stayed
        for bad, message in (({"nodes": "gpu02", "duration": "x"},
                              "Invalid time specified: duration expected a number or null"),
                             ({"nodes": "gpu02", "users": 5}, "Invalid value for users: expected a string"),
                             ({"nodes": "gpu02", "end": now}, "Invalid time specified")):
            assert (await api.call("POST", "/reservations/train", bad))[:2] == (400, {"error": message})
            after = api.ctl.state.reservations["train"]
            assert after is before and after.nodes == ("gpu01",) and after.end == now + 60 + 3600
            assert asdict(after) == saved
        await api.ok("POST", "/reservations/train", {"nodes": "gpu02"})
        assert api.ctl.state.reservations["train"].nodes == ("gpu02",)
        assert (await api.ok("GET", "/reservations"))["reservations"][0]["nodes"] == ["gpu02"]
        assert (await api.call("DELETE", "/reservations/no such"))[:2] == (
            400, {"error": "Invalid value for name: expected a reservation name (letters, digits, '.', '_', '-')"})
        await api.lists_work()
    run(tmp_path, check)


def test_only_ping_and_openapi_skip_authentication(tmp_path):
    async def check(api):
        async def answer(request):
            from aiohttp import web
            return web.json_response({"secret": True})
        # a route whose path merely ends in /ping, as one might be added one day
        api.client.server.app.router._frozen = False
        for path in ("/api/v1/jobs/{job_id}/ping", "/api/v1/openapi.json/ping", "/ping"):
            api.client.server.app.router.add_get(path, answer)
        for path in ("/api/v1/jobs/1/ping", "/api/v1/openapi.json/ping", "/ping", "/api/v1/ping/", "/api/v1//ping",
                     "/api/v1/nosuch", "/api/v1/jobs"):
            async with api.client.get(path) as r:
                assert r.status == 401, (path, r.status, await r.text())
                assert (await r.json())["error"].startswith("Invalid authentication credential: no token")
        assert (await api.call("GET", "/ping", user=None))[0] == 200
        doc = (await api.call("GET", "/openapi.json", user=None))[1]
        assert doc["openapi"] == "3.1.0" and doc["paths"]["/api/v1/jobs"]["post"]["requestBody"]
    run(tmp_path, check)


def test_the_published_schemas_are_the_enforced_ones(tmp_path):
    async def check(api):
        from minislurm.ctld.schema import ROUTES, SUBMIT
        doc = (await api.ok("GET", "/openapi.json"))
        post = doc["paths"]["/api/v1/jobs"]["post"]
        assert post["requestBody"]["content"]["application/json"]["schema"] == json.loads(json.dumps(SUBMIT))
        ops = {(m.upper(), p.removeprefix("/api/v1")) for p, item in doc["paths"].items() for m in item}
        assert ops == set(ROUTES)
        params = {p["name"]: p for p in doc["paths"]["/api/v1/jobs"]["get"]["parameters"]}
        assert params["ids"]["style"] == "form" and params["ids"]["explode"] is False
    run(tmp_path, check)


@pytest.mark.parametrize("exc", [KeyError("spec"), TypeError("bad operand"), AttributeError("x"), ValueError("y")])
def test_a_bug_in_a_handler_is_a_logged_500_with_a_request_id(tmp_path, caplog, monkeypatch, exc):
    from minislurm.ctld import admission

    async def check(api):
        async def broken(ctl, user, request):
            raise exc
        monkeypatch.setattr(admission, "submit", broken)
        caplog.set_level(logging.ERROR, logger="minislurm.ctld")
        status, reply, headers = await api.call("POST", "/jobs", good_job())
        rid = headers["X-Request-Id"]
        assert (status, reply) == (500, {"error": f"Unexpected controller error (request {rid})"})
        logged = [r for r in caplog.records if rid in r.getMessage()]
        assert len(logged) == 1 and logged[0].exc_info[1] is exc, caplog.text
        assert "POST '/api/v1/jobs' failed" in logged[0].getMessage()
        await api.lists_work()  # and the controller goes on
    run(tmp_path, check)


def test_request_ids_differ_and_come_with_every_answer(tmp_path):
    async def check(api):
        ids = {(await api.call("GET", "/ping", user=None))[2]["X-Request-Id"] for _ in range(5)}
        ids.add((await api.call("GET", "/jobs/x"))[2]["X-Request-Id"])
        assert len(ids) == 6
    run(tmp_path, check)


def test_the_controllers_own_token_and_node_tokens_act_as_no_user(tmp_path):
    async def check(api):
        signer = api.ctl.signer
        for token in (signer.ctld_token(), signer.node_token("gpu01")):
            api.tokens["daemon"] = token
            for method, path, body in (("GET", "/jobs", None), ("POST", "/jobs", good_job()),
                                       ("POST", "/token", {"username": "root"})):
                status, reply, _ = await api.call(method, path, body, user="daemon")
                assert (status, reply["error"]) == (403, "Access/permission denied"), (path, status, reply)
        assert not api.ctl.state.jobs
    run(tmp_path, check)


def test_only_an_operator_puts_an_admin_hold(tmp_path):
    async def check(api):
        job_id = (await api.ok("POST", "/jobs", good_job(hold=True), user="alice"))["job_id"]
        await api.ok("POST", f"/jobs/{job_id}/release", {}, user="alice")
        status, reply, _ = await api.call("POST", f"/jobs/{job_id}/hold", {"kind": "admin"}, user="alice")
        assert (status, reply["error"]) == (403, "Access/permission denied")
        assert api.ctl.state.jobs[job_id].hold is None
        await api.ok("POST", f"/jobs/{job_id}/hold", {"kind": "admin"}, user="root")
        assert api.ctl.state.jobs[job_id].hold == "admin"
    run(tmp_path, check)


def test_reservation_flags_are_checked_by_the_controller_too(tmp_path):
    """scontrol checks flags first; the controller answers any other client as Slurm does (an
    unknown flag once reached a set difference with a tuple: a 500)."""
    async def check(api):
        body = {"name": "x", "nodes": "node01", "start": None, "duration": 60, "users": "root"}
        assert (await api.call("POST", "/reservations", dict(body, flags="BOGUS,MAINT"), user="root"))[:2] == (
            400, {"error": "Error parsing flags BOGUS"})
        assert (await api.call("POST", "/reservations", dict(body, flags="REPLACE_DOWN"), user="root"))[:2] == (
            400, {"error": "Invalid node name specified"})
        assert "x" not in api.ctl.state.reservations  # by count it is taken: tests/live/test_nodes.py
    run(tmp_path, check)
