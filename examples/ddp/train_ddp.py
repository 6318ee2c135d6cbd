"""A small, honest data-parallel training run that survives node failures and time limits.

Start one process per GPU with ``srun`` (see ``train.sbatch``).  Each process reads its rank
from Slurm's variables (:mod:`minislurm.train.distenv`), joins the process group (gloo on CPU,
nccl with CUDA GPUs), and trains a small MLP on a seeded synthetic regression problem.
Every ``--ckpt-every`` steps rank 0 writes an atomic checkpoint holding the model, the
optimizer, the step and every rank's random state, so a requeued run resumes exactly where
the checkpoint left it and ends with the same weights, bit for bit, as an uninterrupted run.

On SIGUSR1 (``#SBATCH --signal=USR1@60``: "your time is nearly up") the ranks agree on the
next step, checkpoint, and rank 0 requeues the job with ``scontrol requeue $SLURM_JOB_ID``
(``--when-warned requeue``), or the link of a chain ends so that the next link goes on
(``--when-warned stop``).

The checkpoints belong to a *run*, ``--run NAME``, kept in ``ckpt/NAME``: by default the job's
own id, or the array's (``SLURM_ARRAY_JOB_ID``), so every task of ``sbatch --array=1-10%1``
is one link of the same run, while a new job never picks up another job's state.  Links
submitted as separate jobs (``--dependency=singleton``) name their run: ``--run "$SLURM_JOB_NAME"``.
A link that finds its run already finished says so and exits 0.
"""

from __future__ import annotations

import signal

# Listen for the time-limit warning first: importing torch takes seconds, and an early
# SIGUSR1 would otherwise kill the process (its default action).
WARNED = []
signal.signal(signal.SIGUSR1, lambda *_: WARNED.append(True))

import argparse  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

from minislurm.train.checkpoint import Checkpointer, Fenced  # noqa: E402
from minislurm.train.distenv import from_environment  # noqa: E402

SEED = 1234
FEATURES, HIDDEN, SAMPLES = 16, 64, 4096


def dataset() -> tuple[torch.Tensor, torch.Tensor]:
    """The same data on every rank: y = sin(x . w) + noise, from a fixed seed."""
    g = torch.Generator().manual_seed(SEED)
    x = torch.randn(SAMPLES, FEATURES, generator=g)
    w = torch.randn(FEATURES, 1, generator=g)
    return x, torch.sin(x @ w) + 0.05 * torch.randn(SAMPLES, 1, generator=g)


def batch_indices(step: int, rank: int, world: int, batch: int) -> torch.Tensor:
    """This rank's share of step ``step``: a per-epoch permutation, a function of the step only."""
    per_epoch = SAMPLES // (batch * world)
    epoch, offset = divmod(step, per_epoch)
    order = torch.randperm(SAMPLES, generator=torch.Generator().manual_seed(SEED + epoch))
    start = (offset * world + rank) * batch
    return order[start:start + batch]


def model() -> nn.Module:
    torch.manual_seed(SEED)
    return nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Dropout(0.1), nn.Linear(HIDDEN, 1))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--ckpt-every", type=int, default=20)
    p.add_argument("--run", default=None, help="the run the checkpoints belong to (default: the (array) job id)")
    p.add_argument("--ckpt-dir", default=None, help="the run's folder (default: ckpt/RUN)")
    p.add_argument("--when-warned", choices=("requeue", "stop"), default="requeue",
                   help="on SIGUSR1: requeue this job, or stop (a link of a chain)")
    p.add_argument("--step-time", type=float, default=0.0, help="extra seconds per step (to watch it run)")
    p.add_argument("--final", default="final.pt", help="where rank 0 writes the final weights")
    p.add_argument("--crash-rank", type=int, default=-1, help="this rank fails at step --crash-step (a bad run)")
    p.add_argument("--crash-step", type=int, default=-1)
    args = p.parse_args()
    if args.steps < 1:
        p.error("--steps: at least 1")

    env = from_environment()  # srun's variables (or torchrun's, when started by hand)
    env.export()
    torch.set_num_threads(1)
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(env.local_rank)
        deterministic_cuda()
    dist.init_process_group("nccl" if cuda else "gloo", init_method="env://")
    device = torch.device("cuda", env.local_rank) if cuda else torch.device("cpu")
    rank, world = env.rank, env.world_size

    run = args.run or os.environ.get("SLURM_ARRAY_JOB_ID") or str(env.job_id or "local")
    ckpt = Checkpointer(args.ckpt_dir or os.path.join("ckpt", run), env.job_id, env.restart_count)
    if rank == 0:
        ckpt.claim()
    dist.barrier()
    net, x, y = model(), *dataset()
    opt = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=0.9)
    torch.manual_seed(SEED + 1000 + rank)  # each rank's dropout stream (CPU and, if any, its GPU)
    step = 0
    state = ckpt.load()
    if state is not None:
        net.load_state_dict(state["model"])
        opt.load_state_dict(state["optim"])
        step = state["step"]
        set_rng_state(state["rng"][rank])
        if rank == 0:
            meta = state["meta"]
            of = "" if meta["job_id"] == env.job_id else f"job {meta['job_id']} "  # an earlier link's
            print(f"job {env.job_id} restart {env.restart_count}: resuming at step {step} "
                  f"(checkpoint of {of}restart {meta['restart_count']})", flush=True)
    elif rank == 0:
        print(f"job {env.job_id} restart {env.restart_count}: starting at step 0 on {world} ranks (run {run})",
              flush=True)
    if state is not None and step >= args.steps:  # a link after the last one: nothing left to train
        if rank == 0:
            print(f"run {run} finished at step {step} (of {args.steps}); nothing to do", flush=True)
            if not os.path.exists(args.final):
                torch.save(state["model"], args.final)
        return leave()
    ddp = DDP(net.to(device), device_ids=[env.local_rank] if cuda else None)
    ddp.register_comm_hook(world, sum_in_rank_order)

    loss_fn = nn.MSELoss()
    while step < args.steps:
        if rank == args.crash_rank and step == args.crash_step:
            raise SystemExit(f"rank {rank}: simulated crash at step {step}")
        idx = batch_indices(step, rank, world, args.batch)
        opt.zero_grad()
        loss = loss_fn(ddp(x[idx].to(device)), y[idx].to(device))
        loss.backward()
        opt.step()
        step += 1
        if args.step_time:
            time.sleep(args.step_time)
        stop = torch.tensor([1.0 if WARNED else 0.0], device=device)
        dist.all_reduce(stop)  # every rank learns that one was warned, at the same step
        if step % args.ckpt_every == 0 or step == args.steps or stop.item():
            seconds = save(ckpt, net, opt, step, rank, world)
            if rank == 0:
                print(f"restart {env.restart_count} | step {step}: loss {loss.item():.6f}, "
                      f"checkpoint written in {seconds * 1000:.1f} ms", flush=True)
        if stop.item() and step < args.steps:
            signal.signal(signal.SIGUSR1, signal.SIG_IGN)
            if rank == 0 and args.when_warned == "stop":
                print(f"step {step}: time is nearly up, link {env.job_id} stops; the next link goes on", flush=True)
            elif rank == 0:
                print(f"step {step}: time is nearly up, requeueing job {env.job_id}", flush=True)
                scontrol = shutil.which("scontrol") or ""
                cmd = [scontrol] if scontrol else [sys.executable, "-m", "minislurm.cli.main", "scontrol"]
                subprocess.run([*cmd, "requeue", str(env.job_id)], check=False)
            del ddp  # (see below)
            return leave()
    # Done: a late warning must not kill the process while it shuts down (Python restores the
    # default action, "terminate", for signals it was handling; an ignored one stays ignored).
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    # DDP's reducer holds on to the process group and its gloo work: drop it before the group
    # is destroyed, or its teardown may come after and abort the process at exit (seen on the
    # real-Slurm twin: "terminate called without an active exception" after the last step).
    del ddp
    if rank == 0:
        torch.save({k: v.cpu() for k, v in net.state_dict().items()}, args.final)
        print(f"done: {step} steps, final loss {loss.item():.6f}, weights in {args.final}", flush=True)
    return leave()


def leave() -> int:
    """Every rank waits for the others (rank 0 may still be writing), then leaves the group."""
    dist.barrier()
    dist.destroy_process_group()
    return 0


def sum_in_rank_order(world: int, bucket):
    """Average gradients by adding them in rank order, element by element.

    Floating-point addition is not associative, and a ring all-reduce adds each element in an
    order that depends on how DDP packs gradients into buckets, which differs in the first
    step after a restart.  Gathering every rank's gradients and adding them 0, 1, 2, ... makes
    the result independent of the packing, so a resumed run stays bit-identical.  (It moves
    ``world`` times more data than an all-reduce: fine for this model, not for an LLM.)
    """
    grad = bucket.buffer()
    parts = [torch.empty_like(grad) for _ in range(world)]
    dist.all_gather(parts, grad)
    total = parts[0].clone()
    for part in parts[1:]:
        total += part
    future = torch.futures.Future()
    future.set_result(total / world)
    return future


def stale() -> None:
    """This run was replaced by a newer incarnation (a requeue while it was cut off): stop doing
    anything at all, without a word, since its log is shared with the new run, and wait to be
    killed, which the node's agent does as soon as it hears from the controller again."""
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    while True:
        signal.pause()


def deterministic_cuda() -> None:
    """On GPUs the same inputs give the same bits only with deterministic kernels: cuBLAS needs a
    fixed workspace (set before its first use), cuDNN must not pick the fastest algorithm per run,
    and ops without a deterministic version then raise instead of silently varying."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.backends.cudnn.benchmark = False
    torch.use_deterministic_algorithms(True)


def rng_state() -> dict:
    """This rank's generators: the CPU one and, on a GPU, its device's own generator (dropout on
    a GPU draws from the latter, which ``torch.get_rng_state`` does not include)."""
    cuda = torch.cuda.get_rng_state().cpu() if torch.cuda.is_available() else None
    return {"cpu": torch.get_rng_state(), "cuda": cuda}


def set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["cpu"])
    if state["cuda"] is not None:
        torch.cuda.set_rng_state(state["cuda"])


def save(ckpt: Checkpointer, net: nn.Module, opt, step: int, rank: int, world: int) -> float:
    """Gather every rank's RNG state on rank 0, which writes the checkpoint; returns its seconds."""
    states = [None] * world
    dist.all_gather_object(states, rng_state())
    seconds = 0.0
    if rank == 0:
        try:
            seconds = ckpt.save({"model": net.state_dict(), "optim": opt.state_dict(), "step": step, "rng": states})
        except Fenced:
            stale()
    dist.barrier()
    return seconds


if __name__ == "__main__":
    sys.exit(main())
