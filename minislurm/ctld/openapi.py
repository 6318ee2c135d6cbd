"""The OpenAPI 3.1 description of the controller's API, built from the routes and their schemas.

Paths and operations come from the application's router (so the document cannot drift from
the code), summaries from the handlers' docstrings or names, request bodies and parameters
from :mod:`minislurm.ctld.schema` (the very schemas the server enforces: OpenAPI 3.1 speaks
JSON Schema 2020-12), and the record schemas from the TypedDicts in :mod:`minislurm.core.views`.
"""

from __future__ import annotations

import types
import typing

from minislurm.core.views import JobView, NodeView, PartitionView
from minislurm.ctld.schema import PATH_PARAMS, ROUTES

_PY_TO_JSON = {int: "integer", float: "number", str: "string", bool: "boolean"}

RESPONSES = {
    ("POST", "/jobs"): {"type": "object", "properties": {
        "job_id": {"type": "integer"}, "job_ids": {"type": "array", "items": {"type": "integer"}}}},
    ("GET", "/jobs"): {"type": "object", "properties": {
        "jobs": {"type": "array", "items": {"$ref": "#/components/schemas/JobView"}}, "now": {"type": "number"}}},
    ("GET", "/jobs/{job_id}"): {"$ref": "#/components/schemas/JobView"},
    ("GET", "/jobs/{job_id}/wait"): {"$ref": "#/components/schemas/JobView"},
    ("GET", "/nodes"): {"type": "object", "properties": {
        "nodes": {"type": "array", "items": {"$ref": "#/components/schemas/NodeView"}}}},
    ("GET", "/partitions"): {"type": "object", "properties": {
        "partitions": {"type": "array", "items": {"$ref": "#/components/schemas/PartitionView"}}}},
    ("POST", "/token"): {"type": "object", "properties": {"token": {"type": "string"}, "user": {"type": "string"}}},
}
_ERRORS = {"400": "refused: Slurm's message, naming the field at fault", "401": "no valid token",
           "403": "not allowed", "404": "no such job or route", "413": "request too large",
           "500": "a controller bug, logged with the request id given in the message"}


def _schema(tp) -> dict:
    origin = typing.get_origin(tp)
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    nullable = type(None) in typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        out = _schema(args[0]) if len(args) == 1 else {"oneOf": [_schema(a) for a in args]}
    elif origin is list:
        out = {"type": "array", "items": _schema(args[0])}
    elif origin is dict:
        out = {"type": "object", "additionalProperties": _schema(args[1])}
    else:
        out = {"type": _PY_TO_JSON.get(tp, "string")}
    if nullable:
        out = {**out, "type": [out["type"], "null"]} if "type" in out else {"anyOf": [out, {"type": "null"}]}
    return out


def _record(td) -> dict:
    return {"type": "object", "properties": {k: _schema(t) for k, t in typing.get_type_hints(td).items()}}


def _parameters(rel: str, query: dict) -> list[dict]:
    out = [{"name": p.strip("{}"), "in": "path", "required": True, "schema": PATH_PARAMS[p.strip("{}")]}
           for p in rel.split("/") if p.startswith("{")]
    for name, schema in query.items():
        param = {"name": name, "in": "query", "required": False, "schema": schema}
        if "array" in schema.get("type", ()):
            param.update(style="form", explode=False)  # ids=1,2,3
        out.append(param)
    return out


def build(app, prefix: str) -> dict:
    error = {"content": {"application/json": {"schema": {
        "type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}}}}}
    paths: dict = {}
    for route in app.router.routes():
        info = route.resource.get_info()
        path = info.get("path") or info.get("formatter")
        if not path or not path.startswith(prefix) or route.method == "HEAD":
            continue
        rel = path[len(prefix):]
        spec = ROUTES.get((route.method, rel), {})
        doc = (route.handler.__doc__ or route.handler.__name__.replace("_", " ")).strip().splitlines()[0]
        op: dict = {"summary": doc, "operationId": route.handler.__name__,
                    "responses": {"200": {"description": "OK"},
                                  **{code: {"description": why, **error} for code, why in _ERRORS.items()}}}
        if (route.method, rel) in (("GET", "/ping"), ("GET", "/openapi.json")):
            op["security"] = []
        if "body" in spec:
            op["requestBody"] = {"required": bool(spec["body"].get("required")),
                                 "content": {"application/json": {"schema": spec["body"]}}}
        if (route.method, rel) in RESPONSES:
            op["responses"]["200"] = {"description": "OK", "content": {
                "application/json": {"schema": RESPONSES[(route.method, rel)]}}}
        params = _parameters(rel, spec.get("query", {}))
        if params:
            op["parameters"] = params
        paths.setdefault(path, {})[route.method.lower()] = op
    return {
        "openapi": "3.1.0",
        "info": {"title": "minislurm controller API", "version": "1",
                 "description": "The slurmctld of minislurm. Authenticate with `Authorization: Bearer <JWT>` "
                                "(`scontrol token`). Every input is checked against the schemas below."},
        "paths": paths,
        "components": {
            "securitySchemes": {"jwt": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}},
            "schemas": {"JobView": _record(JobView), "NodeView": _record(NodeView),
                        "PartitionView": _record(PartitionView)}},
        "security": [{"jwt": []}],
    }
