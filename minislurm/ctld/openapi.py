"""The OpenAPI 3 description of the controller's API, built from the routes themselves.

Paths and operations come from the application's router (so the document cannot drift from
the code), summaries from the handlers' docstrings or names, and the record schemas from the
TypedDicts in :mod:`minislurm.core.views`.
"""

from __future__ import annotations

import types
import typing

from minislurm.core.views import JobView, NodeView, PartitionView

_PY_TO_JSON = {int: "integer", float: "number", str: "string", bool: "boolean"}

REQUESTS = {
    ("POST", "/jobs"): {"type": "object", "required": ["spec"], "properties": {
        "spec": {"type": "object", "description": "sbatch/srun options (minislurm.core.spec.spec_to_dict)"},
        "script": {"type": "string"}, "argv": {"type": "array", "items": {"type": "string"}},
        "environment": {"type": "object", "additionalProperties": {"type": "string"}},
        "work_dir": {"type": "string"}, "stdout": {"type": "string"}, "stderr": {"type": "string"},
        "batch": {"type": "boolean", "description": "false for an srun allocation"},
        "uid": {"type": "integer"}, "gid": {"type": "integer"}, "submit_host": {"type": "string"}}},
    ("POST", "/jobs/{job_id}/cancel"): {"type": "object", "properties": {
        "signal": {"type": "integer"}, "target": {"type": "string", "enum": ["steps", "batch_tree", "all"]}}},
    ("POST", "/jobs/{job_id}/requeue"): {"type": "object", "properties": {"hold": {"type": "boolean"}}},
    ("POST", "/jobs/{job_id}/steps"): {"type": "object", "properties": {
        "ntasks": {"type": "integer"}, "nodes": {"type": "integer"}, "ntasks_per_node": {"type": "integer"},
        "cpus_per_task": {"type": "integer"}, "gpus_per_node": {"type": "integer"},
        "nodelist": {"type": "array", "items": {"type": "string"}}, "name": {"type": "string"}}},
    ("POST", "/nodes/update"): {"type": "object", "required": ["names"], "properties": {
        "names": {"type": "array", "items": {"type": "string"}},
        "state": {"type": "string", "enum": ["DOWN", "DRAIN", "RESUME", "UNDRAIN", "IDLE"]},
        "reason": {"type": "string"}}},
    ("POST", "/token"): {"type": "object", "properties": {
        "username": {"type": "string"}, "lifespan": {"type": "number"}}},
}
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
        out["nullable"] = True
    return out


def _record(td) -> dict:
    return {"type": "object", "properties": {k: _schema(t) for k, t in typing.get_type_hints(td).items()}}


def build(app, prefix: str) -> dict:
    error = {"description": "refused: Slurm's message", "content": {"application/json": {"schema": {
        "type": "object", "properties": {"error": {"type": "string"}}}}}}
    paths: dict = {}
    for route in app.router.routes():
        info = route.resource.get_info()
        path = info.get("path") or info.get("formatter")
        if not path or not path.startswith(prefix) or route.method == "HEAD":
            continue
        rel = path[len(prefix):]
        doc = (route.handler.__doc__ or route.handler.__name__.replace("_", " ")).strip().splitlines()[0]
        op: dict = {"summary": doc, "operationId": route.handler.__name__,
                    "responses": {"200": {"description": "OK"}, "400": error, "401": error, "403": error}}
        if rel in ("/ping", "/openapi.json"):
            op["security"] = []
        if (route.method, rel) in REQUESTS:
            op["requestBody"] = {"content": {"application/json": {"schema": REQUESTS[(route.method, rel)]}}}
        if (route.method, rel) in RESPONSES:
            op["responses"]["200"] = {"description": "OK", "content": {
                "application/json": {"schema": RESPONSES[(route.method, rel)]}}}
        params = [p.strip("{}") for p in rel.split("/") if p.startswith("{")]
        if params:
            op["parameters"] = [{"name": p, "in": "path", "required": True,
                                 "schema": {"type": "integer" if p.endswith("_id") else "string"}} for p in params]
        paths.setdefault(path, {})[route.method.lower()] = op
    return {
        "openapi": "3.0.3",
        "info": {"title": "minislurm controller API", "version": "1",
                 "description": "The slurmctld of minislurm. Authenticate with `Authorization: Bearer <JWT>` "
                                "(`scontrol token`)."},
        "paths": paths,
        "components": {
            "securitySchemes": {"jwt": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}},
            "schemas": {"JobView": _record(JobView), "NodeView": _record(NodeView),
                        "PartitionView": _record(PartitionView)}},
        "security": [{"jwt": []}],
    }
