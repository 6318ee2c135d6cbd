"""The controller API's inputs as JSON Schema (2020-12): one entry per route, enforced and published.

:mod:`minislurm.ctld.validate` checks every request against these before a handler runs, and
:mod:`minislurm.ctld.openapi` publishes the same dicts in ``openapi.json`` (OpenAPI 3.1, whose
schema dialect is JSON Schema 2020-12), so the description is the rule the server applies.

Bounds are Slurm's where it has one (``MaxArraySize``, ``max_script_size``, nice, uint32 ids and
counts) and otherwise sized so no value can make a loop, a format or a table blow up: every
string, list and map is bounded, every number finite.  A ``description`` on a schema is the
reason given when a value fails its pattern or choice, and ``x-slurm-error`` is Slurm's own
message for a bad value of that field (the validator uses the nearest one above the fault).
"""

from __future__ import annotations

from minislurm.core import errors
from minislurm.core.arrays import INVALID_ARRAY
from minislurm.core.timefmt import MAX_LIMIT_MINUTES

MAX_U32 = 2**32 - 2  # Slurm's ids and counts are uint32, with NO_VAL (0xfffffffe) excluded
MAX_COUNT = 2**31 - 1  # sbatch's own limit for -n/-c/--ntasks-per-node (parse_int)
MAX_NICE = 2147483645  # NICE_OFFSET - 3, as sbatch checks it
MAX_EPOCH = 2**32 - 1  # times are epoch seconds up to 2106; a later one cannot be printed
MAX_MINUTES = MAX_LIMIT_MINUTES  # a time limit in minutes (uint32; INFINITE is its own word)
MAX_MB = 2**40  # memory in MB
MAX_ARRAY_SIZE = 1001  # Slurm's default MaxArraySize: array indices are 0..1000
MAX_SCRIPT = 4 * 1024 * 1024  # Slurm's default max_script_size (bytes; here characters)
MAX_PATH = 4096  # PATH_MAX
MAX_ARG = 131072  # MAX_ARG_STRLEN: the longest single argument or environment string
MAX_NAME = 1024
MAX_NODES = 65536  # MAX_SLURM_NODES, also the largest hostlist range
MAX_DEPTH = 32  # JSON nesting; the deepest valid request is 5 levels
MAX_BODY = 8 * 1024 * 1024  # bytes: a max_script_size script plus its environment, with room

NO_CONTROL = "^[^\\x00-\\x1f\\x7f]*$"
NO_NUL = "^[^\\x00]*$"


def _int(lo: int = 0, hi: int = MAX_U32, *, null: bool = False) -> dict:
    return {"type": ["integer", "null"] if null else "integer", "minimum": lo, "maximum": hi}


def _num(lo: float = 0, hi: float = MAX_EPOCH, *, null: bool = False) -> dict:
    return {"type": ["number", "null"] if null else "number", "minimum": lo, "maximum": hi}


def _text(max_len: int = MAX_NAME, *, null: bool = False, pattern: str = NO_NUL, why: str = "") -> dict:
    out = {"type": ["string", "null"] if null else "string", "maxLength": max_len, "pattern": pattern}
    out["description"] = why or ("text without NUL characters" if pattern == NO_NUL else "text without control "
                                 "characters")
    return out


def _list(items: dict, max_items: int, *, null: bool = False, min_items: int = 0) -> dict:
    return {"type": ["array", "null"] if null else "array", "items": items, "maxItems": max_items,
            "minItems": min_items}


def _object(props: dict, required: tuple[str, ...] = ()) -> dict:
    return {"type": "object", "properties": props, "required": list(required), "additionalProperties": False}


def _slurm(schema: dict, message: str) -> dict:
    return {**schema, "x-slurm-error": message}


NAME = _text(MAX_NAME)  # free text (a job name may hold any character but NUL; commands escape them)
NODE_NAME = _text(256, pattern="^[A-Za-z0-9._-]+$", why="a node name (letters, digits, '.', '_', '-')")
USER_NAME = _text(64, pattern="^[A-Za-z0-9_][A-Za-z0-9_.@-]*[$]?$", why="a user name")
PATH = _text(MAX_PATH)
FLAG = {"type": ["boolean", "null"]}
JOB_IDS = _slurm(_list(_int(0, MAX_U32), 1000), errors.INVALID_JOB_ID)
SIGNAL = _int(0, 64, null=True)
EXIT_CODE = _int(0, 255)
UID = _slurm(_int(0, MAX_U32), errors.USER_ID_MISSING)
NODE_COUNT = _slurm(_int(0, MAX_U32, null=True), errors.INVALID_NODE_COUNT)
TASK_COUNT = _slurm(_int(1, MAX_COUNT, null=True), errors.BAD_TASK_COUNT)
# ``?task=N``: one task of the array the path's id names (without it, every task)
ARRAY_TASK = {"task": _slurm(_int(0, MAX_U32), errors.INVALID_JOB_ID)}
NODE_LIST = _slurm(_list(NODE_NAME, MAX_NODES, null=True), errors.INVALID_NODE_NAME)
TIME_LIMIT = _slurm({"anyOf": [{"type": "number", "exclusiveMinimum": 0, "maximum": MAX_MINUTES},
                               {"const": "INFINITE"}, {"type": "null"}],
                     "description": f"a number of minutes above 0 (at most {MAX_MINUTES}) or INFINITE"},
                    errors.INVALID_TIME_LIMIT)


def _tuple(*items: dict, required: int, why: str, null: bool = False) -> dict:
    """A JSON array of fixed shape (how tuples of the JobSpec travel)."""
    return {"type": ["array", "null"] if null else "array", "prefixItems": list(items), "items": False,
            "minItems": required, "description": why}


GPUS = _slurm(_tuple(_text(64, null=True, pattern=NO_CONTROL), _int(0, MAX_COUNT), required=2,
                     why="[type or null, count]", null=True), errors.INVALID_GRES)
GRES = _slurm(_list(_tuple(_text(64, pattern="^[A-Za-z0-9_.-]+$", why="a GRES name"),
                           _text(64, null=True, pattern=NO_CONTROL), _int(0, MAX_COUNT),
                           required=3, why="[name, type or null, count]"), 64, null=True), errors.INVALID_GRES)
DEPENDENCY = _slurm({"type": ["object", "null"], "additionalProperties": False, "required": ["terms"],
                     "properties": {
                         "terms": _list(_tuple({"enum": ["after", "afterany", "afterok", "afternotok", "aftercorr",
                                                         "afterburstbuffer", "singleton"],
                                                "description": "a dependency type"},
                                               _list(_int(0, MAX_U32), 1000), required=2, why="[type, [job ids]]"),
                                        1000, min_items=1),
                         "any_of": {"type": "boolean"}}}, errors.DEPENDENCY)
ARRAY = _slurm({"type": ["object", "null"], "additionalProperties": False, "required": ["indices"], "properties": {
    "indices": {"type": "array", "items": _int(0, MAX_ARRAY_SIZE - 1), "minItems": 1,
                "maxItems": MAX_ARRAY_SIZE, "uniqueItems": True},
    "max_running": _int(1, MAX_COUNT, null=True), "text": _text(MAX_ARG, pattern=NO_CONTROL)}}, INVALID_ARRAY)

JOB_SPEC = _object({
    "job_name": _text(MAX_NAME, null=True), "comment": _text(MAX_ARG, null=True),
    "partition": _slurm(_text(MAX_NAME, null=True), errors.INVALID_PARTITION),
    "account": _slurm(_text(MAX_NAME, null=True), errors.INVALID_ACCOUNT),
    "reservation": _slurm(_text(MAX_NAME, null=True), errors.INVALID_RESERVATION),
    "nodes_min": NODE_COUNT, "nodes_max": NODE_COUNT, "ntasks": TASK_COUNT, "ntasks_per_node": TASK_COUNT,
    "cpus_per_task": _int(1, MAX_COUNT, null=True),
    "mem_mb": _int(0, MAX_MB, null=True), "mem_per_cpu_mb": _int(0, MAX_MB, null=True),
    "gres": GRES, "gpus": GPUS, "gpus_per_node": GPUS, "gpus_per_task": GPUS,
    "time_limit_min": TIME_LIMIT, "time_min_min": TIME_LIMIT,
    "output": _text(MAX_PATH, null=True), "error": _text(MAX_PATH, null=True),
    "input": _text(MAX_PATH, null=True), "chdir": _text(MAX_PATH, null=True),
    "open_mode": {"enum": ["append", "truncate", None], "description": "append or truncate"},
    "requeue": FLAG, "exclusive": FLAG, "hold": FLAG, "parsable": FLAG, "wait": FLAG, "test_only": FLAG,
    "kill_on_invalid_dep": FLAG,
    "dependency": DEPENDENCY, "array": ARRAY,
    "signal": _tuple(_int(1, 0xFFFF), _int(0, 0xFFFF), {"type": "boolean"}, {"type": "boolean"}, required=1,
                     why="[signal, seconds, batch only, reservation]", null=True),
    "nice": _int(-MAX_NICE, MAX_NICE, null=True),
    "begin": _slurm(_num(0, MAX_EPOCH, null=True), errors.INVALID_TIME_VALUE),
    "nodelist": NODE_LIST, "exclude": NODE_LIST,
    "wrap": _text(MAX_SCRIPT, null=True), "export": _text(MAX_ARG, null=True),
    "extra": {"type": "object", "maxProperties": 64, "additionalProperties": _text(MAX_PATH),
              "propertyNames": {"maxLength": 64}},
})

SUBMIT = _object({
    "spec": JOB_SPEC,
    "components": _list(JOB_SPEC, 128),  # a heterogeneous job's second and later components
    "script": _text(MAX_SCRIPT, null=True),
    "argv": _list(_text(MAX_ARG), 4096),
    "environment": {"type": "object", "maxProperties": 4096, "additionalProperties": _text(MAX_ARG),
                    "propertyNames": {"minLength": 1, "maxLength": 1024, "pattern": "^[^=\\x00]*$",
                                      "description": "a variable name without '=' or NUL"}},
    "work_dir": PATH, "stdout": PATH, "stderr": PATH, "stdin": _text(MAX_PATH, null=True),
    "command": _text(MAX_ARG), "submit_host": _text(256, pattern=NO_CONTROL),
    "default_name": _text(MAX_NAME, null=True),
    "uid": UID, "gid": _int(0, MAX_U32), "batch": {"type": "boolean"},
}, required=("spec",))

RESERVATION_NAME = _text(128, pattern="^[A-Za-z0-9._-]+$", why="a reservation name (letters, digits, '.', '_', '-')")
_RESV_FIELDS = {
    "nodes": _slurm(_text(MAX_PATH, pattern="^[A-Za-z0-9._,\\[\\] -]*$", why="a hostlist such as gpu[01-04] or ALL"),
                    errors.INVALID_NODE_NAME),
    "start": _slurm(_num(0, MAX_EPOCH, null=True), errors.INVALID_TIME_VALUE),
    "end": _slurm(_num(0, MAX_EPOCH, null=True), errors.INVALID_TIME_VALUE),
    "duration": _slurm(_num(0, 100 * 365 * 86400, null=True), errors.INVALID_TIME_VALUE),
    "users": _text(MAX_ARG, pattern="^[A-Za-z0-9_.@$,-]*$", why="a comma-separated list of user names"),
    "accounts": _text(MAX_ARG, pattern="^[^\\x00-\\x1f\\x7f\\s]*$", why="a comma-separated list of accounts"),
    "flags": _text(MAX_NAME, pattern="^[A-Za-z_,]*$", why="a comma-separated list of flags"),
    "node_count": _slurm(_int(1, MAX_U32), "Node count specification invalid"),
    "partition": _slurm(_text(MAX_NAME), errors.INVALID_PARTITION),
}

STEP_REQUEST = {
    "ntasks": _slurm(_int(1, MAX_NODES, null=True), errors.BAD_TASK_COUNT),
    "nodes": _slurm(_int(1, MAX_NODES, null=True), errors.INVALID_NODE_COUNT),
    "ntasks_per_node": _slurm(_int(1, MAX_NODES, null=True), errors.BAD_TASK_COUNT),
    "cpus_per_task": _int(1, MAX_COUNT, null=True),
    "gpus_per_node": _slurm(_int(0, MAX_COUNT, null=True), errors.INVALID_GRES), "nodelist": NODE_LIST,
    "gpus": _slurm(_int(0, MAX_COUNT, null=True), errors.INVALID_GRES),
    "gpus_per_task": _slurm(_int(0, MAX_COUNT, null=True), errors.INVALID_GRES),
    "exact": {"type": "boolean"}, "overlap": {"type": "boolean"},
    "mem": _int(0, MAX_U32, null=True), "mem_per_cpu": _int(0, MAX_U32, null=True),
    "wait": _num(0, 600, null=True),  # seconds a busy step waits for a step of its job to end
    "name": _text(MAX_NAME, null=True), "overcommit": {"type": "boolean"}}

NONE = _object({})

def _map(keys: str, values: dict, max_items: int) -> dict:
    """An object whose keys match ``keys`` (a pattern), each value ``values``."""
    return {"type": "object", "propertyNames": {"pattern": keys, "maxLength": 256},
            "additionalProperties": values, "maxProperties": max_items}


# What a step's processes used (minislurm.slurmd.usage): CPU seconds, peak resident KiB, tasks;
# per task, and the GPUs' figures (minislurm.slurmd.nvml) or why there are none, on one node.
KIB = _int(0, 2**53)
TASK_USAGE = _object({"cpu": _num(0, MAX_EPOCH), "rss": KIB}, required=("cpu", "rss"))
GPU_USAGE = _object({"util": _num(0, 100), "mem": KIB, "total": KIB, "samples": _int()},
                    required=("util", "mem", "total", "samples"))
NODE_USAGE = {"cpu": _num(0, MAX_EPOCH), "rss": KIB, "ntasks": _int(0, MAX_NODES),
              "tasks": _map("^[0-9]{1,10}$", TASK_USAGE, MAX_NODES), "gpus": _map("^[0-9]{1,4}$", GPU_USAGE, 1024),
              "gpu_note": _text(256, pattern=NO_CONTROL)}
ON_NODE = _object(NODE_USAGE, required=("cpu", "rss", "ntasks"))
USAGE = {"anyOf": [_object({**NODE_USAGE, "nodes": _map(NODE_NAME["pattern"], ON_NODE, MAX_NODES)},
                           required=("cpu", "rss", "ntasks")), {"type": "null"}],
         "description": "usage: cpu seconds, rss KiB, ntasks (per task, GPUs, per node)"}

# (method, path below /api/v1) -> {"body": schema, "query": {name: schema}, "path": {name: schema}}
ROUTES: dict[tuple[str, str], dict] = {
    ("GET", "/ping"): {}, ("GET", "/openapi.json"): {}, ("GET", "/config"): {},
    ("POST", "/jobs"): {"body": SUBMIT},
    ("GET", "/jobs"): {"query": {"ids": JOB_IDS, "states": _list(_text(32, pattern="^[A-Z_]*$",
                                                                        why="job state names"), 64),
                                 "user": _list(USER_NAME, 1000), "partition": _list(NAME, 1000),
                                 "fields": _list(_text(64, pattern="^[a-z_]+$", why="JobView keys"), 100)}},
    ("GET", "/jobs/{job_id}"): {},
    ("GET", "/jobs/{job_id}/wait"): {"query": {
        "until": {"enum": ["start", "end"], "description": "start or end"}, "timeout": _num(0, 300)}},
    ("POST", "/jobs/{job_id}/cancel"): {"query": ARRAY_TASK, "body": _object({
        "uid": UID, "signal": SIGNAL,
        "target": {"enum": ["steps", "batch_scancel", "all", None],
                   "description": "steps, batch_scancel or all"}})},
    ("POST", "/jobs/{job_id}/requeue"): {"query": ARRAY_TASK, "body": _object({"hold": {"type": "boolean"}})},
    ("POST", "/jobs/{job_id}/hold"): {"query": ARRAY_TASK, "body": _object({
        "kind": {"enum": ["user", "admin", None], "description": "user or admin"}})},
    ("POST", "/jobs/{job_id}/release"): {"query": ARRAY_TASK, "body": NONE},
    ("POST", "/jobs/{job_id}/alive"): {"body": NONE},
    ("POST", "/jobs/{job_id}/update"): {"query": ARRAY_TASK, "body": {
        "type": "object", "maxProperties": 16, "propertyNames": {"maxLength": 64},
        "additionalProperties": _text(MAX_NAME),
        "description": "scontrol update Key=Value pairs: TimeLimit, Nice, Name/JobName, Partition, Account, "
                       "NumNodes, ArrayTaskThrottle"}},
    ("POST", "/jobs/{job_id}/complete"): {"body": _object({
        "uid": UID, "exit_code": EXIT_CODE, "signal": _int(0, 64)})},
    ("POST", "/jobs/{job_id}/steps"): {"body": _object({
        **STEP_REQUEST,
        # srun A : B, srun --het-group=N: the heterogeneous job's groups, in rank order
        "het": _list(_object({**STEP_REQUEST, "group": _int(0, 127)}, required=("group",)), 128, null=True)})},
    ("POST", "/jobs/{job_id}/steps/{step_id}/complete"): {"body": _object({
        "exit_code": EXIT_CODE, "signal": _int(0, 64), "usage": USAGE})},
    ("GET", "/jobs/{job_id}/usage"): {},
    ("GET", "/nodes"): {}, ("GET", "/partitions"): {},
    ("POST", "/partitions/update"): {"body": _object({"name": _slurm(_text(MAX_NAME), errors.INVALID_PARTITION),
                                                      "max_time": TIME_LIMIT}, required=("name",))},
    ("POST", "/nodes/update"): {"body": _object({
        "names": _slurm(_list(NODE_NAME, MAX_NODES, min_items=1), errors.INVALID_NODE_NAME),
        "state": _text(32, null=True, pattern=NO_CONTROL), "reason": _text(MAX_NAME, null=True)},
        required=("names",))},
    ("GET", "/acct"): {"query": {"jobs": JOB_IDS, "user": _list(USER_NAME, 1000), "since": _num(0, MAX_EPOCH),
                                 "duplicates": {"enum": ["0", "1"], "description": "0 or 1"}}},
    ("GET", "/priorities"): {}, ("GET", "/shares"): {}, ("GET", "/associations"): {},
    ("POST", "/associations"): {"body": _object({
        "words": _list(_text(MAX_NAME), 256, min_items=1), "commit": {"type": "boolean"}}, required=("words",))},
    ("POST", "/token"): {"body": _object({
        "username": {**USER_NAME, "type": ["string", "null"]},
        "lifespan": {"anyOf": [{"type": "integer", "minimum": 1, "maximum": 2**31 - 1},
                               {"type": "string", "pattern": "^[1-9][0-9]{0,9}$"}, {"type": "null"}],
                     "description": "a number of seconds (1 to 2147483647)"}})},
    ("GET", "/reservations"): {},
    ("POST", "/reservations"): {"body": _object({"name": {**RESERVATION_NAME, "type": ["string", "null"]},
                                                 **_RESV_FIELDS})},
    ("POST", "/reservations/{name}"): {"body": _object(_RESV_FIELDS)},
    ("DELETE", "/reservations/{name}"): {},
    ("GET", "/diag"): {}, ("POST", "/diag/reset"): {"body": NONE}, ("GET", "/jobs/{job_id}/why"): {},
    ("GET", "/dashboard/view"): {},
    ("POST", "/agents/register"): {"body": _object({
        "name": NODE_NAME, "addr": _text(300, pattern="^[A-Za-z0-9._:\\[\\]-]+:[0-9]{1,5}$", why="host:port"),
        "heartbeat": _text(300, null=True, pattern="^[A-Za-z0-9._:\\[\\]-]+:[0-9]{1,5}$", why="host:port"),
        "cpus": _int(0, MAX_COUNT), "memory": _int(0, MAX_MB), "gpus": _int(0, MAX_COUNT),
        "gpu_type": _text(64, null=True, pattern=NO_CONTROL),
        "boot_time": _num(0, MAX_EPOCH, null=True), "os_boot_time": _num(0, MAX_EPOCH, null=True),
        "os": _text(300, pattern=NO_CONTROL), "cpu_load": _num(0, 1e6), "free_mem": _int(0, MAX_MB),
        "jobs": _list({"type": "array", "prefixItems": [_int(), _int()], "items": False, "minItems": 2}, 100000),
        "finished": _list({"type": "array", "prefixItems": [_int(), _int(), EXIT_CODE, _int(0, 128)],
                           "items": False, "minItems": 4}, 100000),
    }, required=("name", "addr"))},
    ("POST", "/agents/job-ended"): {"body": _object({
        "job_id": _int(), "inc": _int(), "exit_code": EXIT_CODE, "signal": _int(0, 128), "usage": USAGE},
        required=("job_id", "inc"))},
}

PATH_PARAMS = {"job_id": _slurm(_int(0, MAX_U32), errors.INVALID_JOB_ID), "step_id": _int(0, MAX_U32),
               "name": RESERVATION_NAME}
