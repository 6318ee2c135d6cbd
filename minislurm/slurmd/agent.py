"""The node agent (like slurmd plus slurmstepd): runs batch scripts and step tasks on one node.

It registers with the controller, then answers it (the routes are in :mod:`minislurm.slurmd.api`):
``/ping`` (with the jobs it runs, for fencing), ``/jobs/launch``, ``/jobs/signal``,
``/jobs/terminate``.  ``srun`` talks to it directly with a step credential the controller signed:
``/steps/launch`` starts the tasks and streams their output back as JSON lines, ``/steps/signal``
forwards Ctrl-C and friends.

Trust: the ``/ping`` and ``/jobs/*`` routes obey the controller alone (a token with the ``ctld``
claim).  The ``/steps/*`` routes act only on what a step credential binds (see
:mod:`minislurm.common.auth`): the run (job id, incarnation) and step, the user (name, uid and gid,
checked against this node's passwd), the tasks and GPUs on this node; a credential that is
expired, already used here, or of a run that has ended here or been superseded starts nothing
(:mod:`minislurm.slurmd.runs`).  Every file and folder of a job is opened by its user
(:mod:`minislurm.slurmd.spawn`).

A batch script's spool folder lives while its run does here: it is removed when the script has
ended and every process of the run is gone, when its launch fails, or when the controller ends
a run this agent no longer knows (one from before a restart).  A later run of the same job (a
requeue) owns the folder from the moment it writes its script, so an earlier run's end never
removes it.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import signal as _signal
import time
from pathlib import Path

from minislurm.common.auth import EXPIRED_CREDENTIAL, INVALID_CREDENTIAL, CredentialError, Signer
from minislurm.common.rpc import JsonClient
from minislurm.core.patterns import default_output, expand_pattern
from minislurm.lifecycle import Background
from minislurm.slurmd import env as slurm_env
from minislurm.slurmd import spool as spooldir
from minislurm.slurmd.heartbeat import host_readings, ping_answer
from minislurm.slurmd.proc import ProcessSet
from minislurm.slurmd.runs import LocalJob, Runs
from minislurm.slurmd.spawn import Stdio, identity_for, spawn
from minislurm.slurmd.usage import Meter

log = logging.getLogger("minislurm.slurmd")


def _os_boot_time() -> float | None:
    """When this machine booted (``btime`` in /proc/stat), for scontrol's BootTime."""
    try:
        with open("/proc/stat") as f:
            return next(float(line.split()[1]) for line in f if line.startswith("btime "))
    except (OSError, StopIteration, ValueError, IndexError):
        return None


def _os_text() -> str:
    """``OS=`` of scontrol show node: the kernel's name, release and version, as uname gives them."""
    u = os.uname()
    return f"{u.sysname} {u.release} {u.version}"


_VERIFIED: dict[tuple[bytes, str], dict] = {}  # step credentials this process has verified: their claims


def _verified(signer: Signer, credential: str, check_expiry: bool) -> dict:
    """A step credential's claims, verified once per process: a step on hundreds of virtual
    nodes brings the same credential to each (its expiry is checked every time).  The claims
    are shared: never change them."""
    claims = _VERIFIED.get((signer.key, credential))
    if claims is None:
        claims = signer.verify_credential(credential, check_expiry=False)
        if len(_VERIFIED) >= 256:
            _VERIFIED.pop(next(iter(_VERIFIED)))
        _VERIFIED[(signer.key, credential)] = claims
    if check_expiry and claims["exp"] <= time.time():
        raise CredentialError(EXPIRED_CREDENTIAL)
    return claims


class NodeAgent:
    def __init__(self, name: str, *, key: bytes, ctld: str, conf: str | None, cpus: int, memory: int,
                 gpus: int, gpu_type: str | None = None, spool: str | Path = "/tmp/minislurm-spool",
                 bind: str = "127.0.0.1", addr: str | None = None):
        self.name, self.ctld, self.conf = name, ctld, conf
        self.signer = Signer(key)
        self.token = self.signer.node_token(name)
        self.cpus, self.memory, self.gpus, self.gpu_type = cpus, memory, gpus, gpu_type
        self.spool = Path(spool)
        self.bind = bind
        # Where the controller and srun reach this agent (Slurm's NodeAddr): the bound address,
        # or a name, for an agent that listens on every address of a host whose address may
        # change (a container taken off its network and put back).
        self.addr = addr or bind
        self.port = 0
        self.runs = Runs(name)
        self.spooled: dict[int, int] = {}  # job id -> the incarnation whose script is in the spool
        # A stop that came while its run's script was still being started: (why, KillWait) to
        # apply once it has, so a requeue or scancel still gives the script its grace.
        self.stop_while_starting: dict[tuple[int, int], tuple[str | None, float]] = {}
        self.unreported: dict[tuple[int, int], tuple[int, int]] = {}
        self.boot_time = time.time()
        self.background = Background(log)
        self.ctld_rpc = JsonClient(self.token, 10, log)
        # The nodes of this agent's process, this one included (more than one when it hosts
        # virtual nodes: :mod:`minislurm.slurmd.host`), by name.
        self.siblings: dict[str, NodeAgent] = {name: self}
        self.offline = False  # cut off the network (a virtual node's fault): says nothing
        self.heartbeat_port = 0  # where its process answers pings (minislurm.slurmd.heartbeat)

    # -- talking to the controller -----------------------------------------------------
    async def _post(self, path: str, payload: dict) -> dict | None:
        if self.offline:
            return None
        return await self.ctld_rpc.request(f"http://{self.ctld}/api/v1{path}", payload)

    async def register(self) -> None:
        """Keep trying until the controller has heard us."""
        delay = 0.1
        while True:
            reply = await self._post("/agents/register", {
                "name": self.name, "addr": f"{self.addr}:{self.port}", "cpus": self.cpus, "memory": self.memory,
                "gpus": self.gpus, "gpu_type": self.gpu_type, "boot_time": self.boot_time,
                "os_boot_time": _os_boot_time(), "os": _os_text(),
                "heartbeat": f"{self.addr}:{self.heartbeat_port}" if self.heartbeat_port else None,
                **ping_answer(self), **host_readings()})
            if reply and reply.get("ok"):
                log.info("%s registered with the controller at %s", self.name, self.ctld)
                return
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)

    async def _report_end(self, job: LocalJob, code: int, sig: int, usage: dict | None = None) -> None:
        key = (job.job_id, job.inc)
        self.unreported[key] = (code, sig)
        delay = 0.2
        while key in self.unreported:
            reply = await self._post("/agents/job-ended", {"job_id": job.job_id, "inc": job.inc,
                                                           "exit_code": code, "signal": sig,
                                                           "usage": usage})
            if reply is not None:
                self.unreported.pop(key, None)
                return
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)

    # -- batch jobs -------------------------------------------------------------------------
    def _output(self, pattern: str, job: dict) -> str:
        path = expand_pattern(pattern, job_id=job["job_id"], job_name=job["name"], user=job["user"],
                              array_job_id=job.get("array_job_id"), array_task_id=job.get("array_task_id"),
                              node=self.name, node_index=0, restart_count=job["restart_count"])
        return path if path.startswith("/") else os.path.join(job["submit_dir"], path)

    async def launch_batch(self, job: dict) -> dict:
        """Start a batch script as its user; ``ok`` once the user has opened its files."""
        job_id, inc = job["job_id"], job["inc"]
        local = self.runs.get(job_id, inc)
        if local is not None and local.batch is not None:
            return {"ok": True}  # a repeated request: already running
        if self.runs.stale(job_id, inc):  # the controller hears of its end from ping or report
            return {"ok": False, "stale": True, "error": f"job {job_id} run {inc} has ended on this node"}
        try:
            who = identity_for(job["user"], job["uid"], job["gid"])
            script = spooldir.write_script(self.spool, job_id, inc, job["script"] or "#!/bin/sh\n", who)
        except spooldir.SpoolFull as exc:  # what jobs brought filled it: the job fails, the node stays up
            log.error("[%s.batch] error: %s", job_id, exc.strerror)
            return {"ok": False, "fault": "job", "error": exc.strerror}
        except (PermissionError, OSError) as exc:
            return {"ok": False, "error": str(exc)}
        self.spooled[job_id] = inc
        array = job.get("array_job_id") is not None
        out_path = self._output(job["stdout"] or default_output(array), job)
        err_path = self._output(job["stderr"], job) if job.get("stderr") else out_path
        stdin = self._output(job["stdin"], job) if job.get("stdin") not in (None, "", "/dev/null") else None
        env = slurm_env.batch_env(job, job["environment"], conf=self.conf)
        try:
            started = await spawn([str(script), *job.get("argv", [])], env, job["submit_dir"], who,
                                  stdio=Stdio(stdin, out_path, err_path, job["open_mode"]))
        except OSError as exc:
            # An environment or argument list too big to exec is the job's doing, not the node's.
            fault = "job" if exc.errno == errno.E2BIG else "node"
            self.stop_while_starting.pop((job_id, inc), None)
            self._drop_spool(job_id, inc)
            return {"ok": False, "fault": fault, "error": f"could not start the batch script: {exc}"}
        if started.error is not None:  # nothing was created: the job fails (Slurm: JobLaunchFailure)
            log.error("[%s.batch] error: %s", job_id, started.error)
            self.runs.end(job_id, inc)
            await started.proc.wait()
            self.stop_while_starting.pop((job_id, inc), None)
            self._drop_spool(job_id, inc)
            return {"ok": False, "fault": "job", "error": started.error}
        stop = self.stop_while_starting.pop((job_id, inc), None)
        if stop is None and self.runs.stale(job_id, inc):  # a later run was seen meanwhile
            stop = (None, 0.0)
        local = self.runs.open(job_id, inc)
        local.batch, local.stderr_fd = started.proc, started.stderr_fd
        local.roots.procs.append(started.proc)
        local.meters["batch"] = Meter(ProcessSet([started.proc]), gpus=job["gpus"].get(self.name, []),
                                      node_gpus=self.gpus)
        self.background.spawn(self._watch_batch(local))
        if stop is not None:
            self._stop(local, *stop)
        return {"ok": True}

    async def _watch_batch(self, job: LocalJob) -> None:
        rc = await job.batch.wait()
        usage = job.meters.pop("batch").stop()
        code, sig = (rc, 0) if rc >= 0 else (0, -rc)
        if rc > 128 and rc - 128 in (_signal.SIGTERM, _signal.SIGKILL, _signal.SIGINT):
            code, sig = 0, rc - 128  # the shell reports a signal death as 128+n
        self.runs.end(job.job_id, job.inc)  # no step of this run may start here from now on
        await job.roots.stop(0)  # nothing of the job may outlive its script
        if job.stderr_fd is not None:
            os.close(job.stderr_fd)
            job.stderr_fd = None
        self._drop_spool(job.job_id, job.inc)  # nothing of the run is left to read it
        await self._report_end(job, code, sig, usage)
        self.runs.forget(job)

    async def terminate(self, job_id: int, inc: int, why: str | None, kill_wait: float) -> dict:
        self.runs.end(job_id, inc)  # even unknown here: no credential of this run may start a step
        job = self.runs.get(job_id, inc)
        if job is None and self.spooled.get(job_id) == inc:  # its script is being started
            told = self.stop_while_starting.get((job_id, inc))
            if told is None or kill_wait < told[1]:  # a kill without grace goes ahead of a stop
                self.stop_while_starting[(job_id, inc)] = (why, kill_wait)
            return {"ok": True, "known": True}
        if job is None:
            self._drop_leftover(job_id)
            return {"ok": True, "known": False}
        if job.stopping and kill_wait > 0:
            # Told again (a restarted controller cannot know it was told): once is enough, or a
            # trap on SIGTERM would run twice.  A kill without grace still goes ahead.
            return {"ok": True, "known": True}
        self._stop(job, why, kill_wait)
        return {"ok": True, "known": True}

    def _stop(self, job: LocalJob, why: str | None, kill_wait: float) -> None:
        """SIGTERM, then SIGKILL after ``kill_wait`` (at once without one), noted in the output."""
        if why and not job.stopping:
            due = "" if why == "CANCELLED" else f" DUE TO {why}"
            self._note_step_cancel(job, due)
            self._note_cancel(job, job.job_id, due)
        job.stopping = True
        self.background.spawn(job.roots.stop(kill_wait))
        if job.batch is None:
            self.runs.forget(job)

    def _drop_spool(self, job_id: int, inc: int) -> None:
        """Remove the run's spool folder, unless a later run of the job has written its own there."""
        if self.spooled.get(job_id) != inc:
            return
        del self.spooled[job_id]
        self._remove_folder(job_id)

    def _drop_leftover(self, job_id: int) -> None:
        """A folder no run of this agent wrote (it was left before a restart): nothing reads it."""
        if job_id not in self.spooled and not any(j == job_id for j, _ in self.runs.live):
            self._remove_folder(job_id)

    def _remove_folder(self, job_id: int) -> None:
        try:
            spooldir.remove(self.spool, job_id)
        except OSError as exc:
            log.warning("%s: could not remove the spool folder of job %s: %s", self.name, job_id, exc)

    def _note_cancel(self, job: LocalJob, job_id: int, due: str) -> None:
        """slurmstepd's line in the job's stderr (src/slurmd/slurmstepd/req.c), as 22.05 words
        it: ``slurmstepd-NODE: error: *** JOB N ON NODE CANCELLED AT T[ DUE TO TIME LIMIT] ***``."""
        if job.stderr_fd is None:
            return
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        text = f"slurmstepd-{self.name}: error: *** JOB {job_id} ON {self.name} CANCELLED AT {stamp}{due} ***\n"
        try:
            os.write(job.stderr_fd, text.encode())
        except OSError:
            pass

    def _note_step_cancel(self, job: LocalJob, due: str) -> None:
        """Each running step's slurmstepd says so on the step's stderr, which its srun prints
        (22.05: ``*** STEP J.S ON NODE CANCELLED AT T[ DUE TO TIME LIMIT] ***``, in a batch
        job's output too, before the job's own line)."""
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        for step_id, notices in job.notices.items():
            text = f"slurmstepd-{self.name}: error: *** STEP {job.job_id}.{step_id} ON {self.name} CANCELLED AT {stamp}{due} ***\n"
            notices.put_nowait({"stepd": text, "node": self.name})

    def signal_job(self, job_id: int, inc: int, signum: int, target: str) -> dict:
        """``target``: steps, batch (the shell alone), batch_scancel (the same, noted in the
        output) or all (see Controller.signal_job)."""
        job = self.runs.get(job_id, inc)
        if job is None:
            return {"ok": True, "known": False}
        batch_alive = job.batch is not None and job.batch.returncode is None
        if target == "batch_scancel" and batch_alive:
            self._note_cancel(job, job_id, "")
        if target in ("batch", "batch_scancel") and batch_alive:
            os.kill(job.batch.pid, signum)
        if target in ("steps", "all"):
            for step in job.steps.values():
                step.signal(signum)
        if target == "all" and batch_alive:
            ProcessSet([job.batch]).signal(signum)
        return {"ok": True, "known": True}

    # -- steps -------------------------------------------------------------------------------
    def check_credential(self, credential: str, *, check_expiry: bool = True) -> dict:
        claims = _verified(self.signer, credential, check_expiry)
        if self.name not in claims["nodes"]:
            raise CredentialError(INVALID_CREDENTIAL)
        return claims

    def step_done(self, job: LocalJob, step_id: int) -> None:
        job.steps.pop(step_id, None)
        job.roots.procs = [p for p in job.roots.procs if p.returncode is None]
        if job.batch is None and not job.steps:
            self.runs.forget(job)

    def signal_step(self, claims: dict, signum: int) -> dict:
        """Only the step the credential names, of the run it names, and only while it runs here."""
        job = self.runs.get(claims["job"], claims["inc"])
        step = job.steps.get(claims["step"]) if job else None
        if step is None:
            return {"ok": True, "known": False}
        step.signal(signum)
        return {"ok": True, "known": True}

    def usage(self, job_id: int, inc: int) -> dict:
        """What the job's batch script and running steps have used here so far (for sstat)."""
        job = self.runs.get(job_id, inc)
        if job is None:
            return {"steps": {}}
        for meter in job.meters.values():
            meter.take()
        return {"steps": {str(k): m.view() for k, m in job.meters.items()}}
