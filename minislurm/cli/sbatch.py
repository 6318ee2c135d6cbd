"""sbatch: submit a batch script.  Prints ``Submitted batch job N`` once the job is safe on disk."""

from __future__ import annotations

import os
import re
import socket
import sys
import time

from minislurm.cli.jobhelp import early_answer
from minislurm.client import Client, ClientError, conf_path, umask_text
from minislurm.core import errors, rlimits
from minislurm.core.directives import build_spec, component_specs, default_job_name, wrap_script
from minislurm.core.hostlist import compress
from minislurm.core.options import exported, refuse_hetjob, split_options
from minislurm.core.optvalues import OptionError
from minislurm.core.spec import MAX_SCRIPT_SIZE, spec_to_dict
from minislurm.core.timefmt import format_timestamp


def max_script_size() -> int:
    """SchedulerParameters' ``max_script_size`` (bytes; 4 MB unless set), for sbatch to read no
    more of a script than the controller would take.  Without a readable slurm.conf, the default."""
    try:
        with open(conf_path()) as f:
            text = f.read()
    except OSError:
        return MAX_SCRIPT_SIZE
    size = MAX_SCRIPT_SIZE
    for line in text.splitlines():
        if re.match(r"\s*SchedulerParameters\s*=", line, re.IGNORECASE):
            m = re.search(r"(?:^|[=,])max_script_size=(\d+)", line.split("#")[0], re.IGNORECASE)
            size = int(m.group(1)) if m else MAX_SCRIPT_SIZE  # the last line counts, as in the parser
    return min(size, MAX_SCRIPT_SIZE)  # the most the controller takes (core/slurmconf.py)


def _read_script(rest: list[str]) -> tuple[str, str | None]:
    """The script's bytes as they are (a DOS script's CRLF line ends reach check_script), and
    no more than the controller's ``max_script_size`` plus one: a larger script (``sbatch
    /dev/zero``) is refused with the controller's answer to it, without reading the rest."""
    cap = max_script_size()
    path = None if not rest or rest[0] == "-" else rest[0]
    try:
        if path is None:
            data = sys.stdin.buffer.read(cap + 1)
        else:
            with open(path, "rb") as f:
                data = f.read(cap + 1)
    except OSError:
        raise OptionError(f"sbatch: error: Unable to open file {path}", 1) from None
    if len(data) > cap:
        raise OptionError(f"sbatch: error: Batch job submission failed: {errors.PATHNAME_TOO_LONG}", 1)
    return data.decode("utf-8", "surrogateescape"), path


def request_for(spec, script: str, rest: list[str], path: str | None) -> dict:
    """What the controller needs besides the options: script, environment, where to run."""
    env = exported(os.environ, spec.export)
    for k in ("SLURM_JWT",):
        env.pop(k, None)
    env.setdefault("SLURM_UMASK", umask_text())
    env.update(rlimits.submit_env(spec.extra.get("propagate")))  # checked in main
    work_dir = os.path.abspath(spec.chdir) if spec.chdir else os.getcwd()
    return {
        "spec": spec_to_dict(spec), "script": script, "argv": rest[1:] if path else [],
        "environment": env, "work_dir": work_dir, "stdout": spec.output or "", "stderr": spec.error or "",
        "stdin": spec.input, "command": os.path.abspath(path) if path else ("(null)" if not spec.wrap else "wrap"),
        "uid": os.getuid(), "gid": os.getgid(), "submit_host": socket.gethostname(), "batch": True,
        "default_name": default_job_name(path, wrap=spec.wrap is not None),
    }


def main(argv: list[str]) -> int:
    if (answered := early_answer("sbatch", argv)) is not None:  # --help, --usage, --version
        return answered
    now = time.time()
    try:
        pairs, rest = split_options(argv, prog="sbatch")
        refuse_hetjob("sbatch", rest)  # before the script is read: a ':' is no file name
        wrap = any(o.key == "wrap" for o, _ in pairs)
        script, path = (None, None) if wrap else _read_script(rest)
        spec, rest = build_spec(script, os.environ, argv, now=now, path=path or "(stdin)")
        components = component_specs(script, path or "(stdin)", now=now)
    except OptionError as exc:
        print(exc.text, file=sys.stderr)
        return exc.exit_code
    if refused := rlimits.refusal(spec.extra.get("propagate"), "sbatch"):
        print(refused, file=sys.stderr)
        return 1
    for name in ("uid", "gid"):  # sbatch's own check; the controller checks the token's user too
        if name in spec.extra and os.getuid() != 0:
            print(f"sbatch: error: --{name} only permitted by root user", file=sys.stderr)
            return 1
    if spec.wrap is not None:
        script = wrap_script(spec.wrap)
    client = Client()
    if spec.test_only:
        return _test_only(client, request_for(spec, script, rest, path))
    request = request_for(spec, script, rest, path)
    if components:  # a heterogeneous job: the components after the first, each its own job
        request["components"] = [spec_to_dict(_named(c, spec.job_name)) for c in components]
    try:
        reply = client.call("POST", "/jobs", request)
    except ClientError as exc:
        print(f"sbatch: error: Batch job submission failed: {exc}", file=sys.stderr)
        return 1
    job_id = reply["job_id"]
    if spec.parsable:
        print(job_id)
    else:
        print(f"Submitted batch job {job_id}")
    sys.stdout.flush()
    if spec.wait:
        return _wait_array(client, job_id) if spec.array is not None else _wait(client, [job_id])
    return 0


def _named(component, name: str):
    if component.job_name is None:
        component.job_name = name
    return component


def _test_only(client: Client, request: dict) -> int:
    """The will-run answer, worded as sbatch 22.05 words it."""
    try:
        r = client.call("POST", "/jobs", request)
    except ClientError as exc:
        print(f"allocation failure: {exc}", file=sys.stderr)
        return 1
    sys.stderr.write(f"sbatch: Job {r['job_id']} to start at {format_timestamp(r['start'])} using {r['cpus']} "
                     f"processors on nodes {compress(r['nodes'])} in partition {r['partition']}\n")
    return 0


def _wait(client: Client, job_ids: list[int]) -> int:
    """``--wait``: block until every job ends; exit with the highest exit code, as sbatch does."""
    worst = 0
    for job_id in job_ids:
        while True:
            try:
                job = client.call("GET", f"/jobs/{job_id}/wait", query={"until": "end", "timeout": 30}, timeout=60)
            except ClientError as exc:
                print(f"sbatch: error: {exc}", file=sys.stderr)
                return 1
            if job["state"] not in ("PENDING", "RUNNING", "COMPLETING", "SUSPENDED"):
                break
        code = int(job["exit_code"].split(":")[0])
        worst = max(worst, code if job["state"] != "CANCELLED" else max(code, 1))
    return worst


def _wait_array(client: Client, array_id: int) -> int:
    """``--wait`` on an array: until every task ends (its tasks change ids as they start,
    so the array is asked for as a whole); the highest exit code, as for one job."""
    while True:
        try:
            tasks = client.call("GET", "/jobs", query={"ids": str(array_id)})["jobs"]
        except ClientError as exc:
            print(f"sbatch: error: {exc}", file=sys.stderr)
            return 1
        tasks = [t for t in tasks if t.get("array_job_id") == array_id]
        if all(t["state"] not in ("PENDING", "RUNNING", "COMPLETING", "SUSPENDED") for t in tasks):
            break
        time.sleep(0.5)
    codes = [int(t["exit_code"].split(":")[0]) for t in tasks]
    return max((max(c, 1) if t["state"] == "CANCELLED" else c for c, t in zip(codes, tasks)), default=0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
