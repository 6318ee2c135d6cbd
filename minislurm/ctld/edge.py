"""The API's edge: every request is authenticated, checked against its route's schema, and
answered as JSON whatever happens behind it.

Only ``GET /api/v1/ping``, ``GET /api/v1/openapi.json``, the metrics and the dashboard's page
files are open (the exact routes, not any path that ends the same way); a node credential is
good for the agents' routes only, a user token for everything else (the controller's own token, the one agents obey, for nothing here).  Path, query and body are then checked (:mod:`minislurm.ctld.validate`)
before a handler runs, so a handler only sees typed, bounded values.

A :class:`SlurmError` (Slurm's refusal, or a schema violation) is a 4xx with Slurm's text.  Any
other exception is a controller bug: logged with its traceback under a request id, answered 500
with that id, and the daemon goes on.  Every answer carries the id in ``X-Request-Id``.
What a handler leaves for after its answer (:func:`answer_then`) runs once the answer is sent.
"""

from __future__ import annotations

import logging
import secrets
import time

from aiohttp import web

from minislurm.common.auth import AuthError
from minislurm.core import errors
from minislurm.core.errors import SlurmError
from minislurm.ctld import stats, validate
from minislurm.ctld.controller import Controller
from minislurm.ctld.dashboard import PAGES
from minislurm.ctld.metrics import ENDPOINTS
from minislurm.ctld.schema import MAX_BODY, ROUTES

log = logging.getLogger("minislurm.ctld")
PREFIX = "/api/v1"
METRICS = ("/metrics", *(f"/metrics/{e}" for e in ENDPOINTS))
# No token: the service's description, the metrics (counts only, as Slurm serves them) and the
# dashboard's page (static files: what it shows comes from GET /api/v1/dashboard/view, with a token)
PUBLIC = {("GET", "/ping"), ("GET", "/openapi.json"), *(("GET", path) for path in (*METRICS, *PAGES))}
AUTH_INVALID = "Invalid authentication credential"
CTL = web.AppKey("ctl", Controller)
USER = web.RequestKey("user", str)  # who the token names: a user, or a node on agent routes
PATH, QUERY, BODY = web.RequestKey("path", dict), web.RequestKey("query", dict), web.RequestKey("body", dict)
REQUEST_ID = web.RequestKey("request_id", str)
# What a handler leaves to be done once its answer is sent (see answer_then): telling agents
# to stop a job the request stopped, as slurmctld replies to scancel and scontrol requeue
# before it signals the job.
AFTER_ANSWER = web.RequestKey("after_answer", list)


def answer_then(request: web.Request, action) -> None:
    """Run ``action()`` (a coroutine function) once this request's answer has been sent."""
    request.setdefault(AFTER_ANSWER, []).append(action)


def _error(status: int, message: str, headers: dict | None = None) -> web.Response:
    return web.json_response({"error": message}, status=status, headers=headers)


def _route(request: web.Request) -> tuple[str, str] | None:
    """(method, path below /api/v1) of the route the request matched; None for no route."""
    resource = request.match_info.route.resource
    path = resource.canonical if resource is not None else ""
    if path in METRICS or path in PAGES:  # Prometheus' endpoints and the dashboard: not under /api/v1
        return (request.method, path)
    return (request.method, path[len(PREFIX):]) if path.startswith(PREFIX + "/") else None


def _agent_route(route: tuple[str, str] | None) -> bool:
    return route is not None and route[1].startswith("/agents/")


def _authenticate(request: web.Request, route: tuple[str, str] | None) -> web.Response | None:
    header = request.headers.get("Authorization", "")
    if not header.startswith("Bearer "):
        return _error(401, f"{AUTH_INVALID}: no token (set SLURM_JWT or run `scontrol token`)")
    try:
        claims = request.app[CTL].signer.verify(header[7:])
    except AuthError as exc:
        return _error(401, f"{AUTH_INVALID}: {exc}")
    # The agents' routes take a node credential, every other route a user token (the
    # controller's own token, which agents obey, is for agents only).
    if ("node" if _agent_route(route) else "sun") not in claims:
        return _error(403, errors.ACCESS_DENIED)
    request[USER] = claims.get("sun") or claims.get("node")
    return None


async def _serve(request: web.Request, handler) -> web.StreamResponse:
    route = _route(request)
    if route not in PUBLIC:
        refused = _authenticate(request, route)
        if refused is not None:
            return refused
        store = request.app[CTL].store
        if request.method != "GET" and not _agent_route(route) and store.failure is not None:
            return _error(503, f"{errors.STATE_SAVE_FAILED}: {store.failure}")
    if route in ROUTES:
        request[PATH], request[QUERY] = validate.params(route, request.match_info, request.query)
        raw = await request.read()
        request[BODY] = validate.body(route, validate.parse_json(raw) if raw.strip() else None)
    return await handler(request)


def _count(request: web.Request, us: int) -> None:
    """sdiag's RPC statistics: the request by the Slurm RPC its route stands for, and by user
    (an agent's requests are the SlurmUser's, as slurmd's are)."""
    route = _route(request)
    name = stats.RPCS.get(route)
    if name is None:
        return
    if route == ("POST", "/jobs") and not (request.get(BODY) or {}).get("batch", True):
        name = stats.ALLOCATION
    ctl = request.app[CTL]
    user = ctl.slurm_user if _agent_route(route) else request.get(USER) or ctl.slurm_user
    ctl.stats.rpc(name, user, us)


def _status(exc: SlurmError) -> int:
    if isinstance(exc, validate.RequestError):
        return exc.status
    return 403 if exc.message == errors.ACCESS_DENIED else 404 if exc.message == errors.INVALID_JOB_ID else 400


@web.middleware
async def guard(request: web.Request, handler):
    """Authenticate, validate, and answer every failure as JSON; never let one kill the daemon."""
    rid = secrets.token_hex(6)
    request[REQUEST_ID] = rid
    began = time.perf_counter()
    request.app[CTL].stats.serving += 1
    try:
        response = await _serve(request, handler)
    except SlurmError as exc:  # a refused request: Slurm's text
        response = _error(_status(exc), str(exc))
    except web.HTTPException as exc:  # aiohttp's own refusals: no route, wrong method, body too big
        if exc.status < 400:
            raise
        allow = {"Allow": exc.headers["Allow"]} if "Allow" in exc.headers else None
        text = f"Request too large (at most {MAX_BODY} bytes)" if exc.status == 413 else exc.reason
        response = _error(exc.status, text, allow)
    except Exception:  # noqa: BLE001 - a bug: logged and answered 500; the controller goes on
        log.exception("request %s: %s %r failed", rid, request.method, request.path_qs[:200])
        response = _error(500, f"Unexpected controller error (request {rid})")
    finally:
        request.app[CTL].stats.serving -= 1
    response.headers["X-Request-Id"] = rid
    _count(request, int((time.perf_counter() - began) * 1e6))
    after = request.get(AFTER_ANSWER)
    if after:
        try:
            await response.prepare(request)
            await response.write_eof()
        except ConnectionError:  # the requester left: what it asked for is done all the same
            pass
        finally:
            for action in after:
                request.app[CTL].spawn(action())
    return response
