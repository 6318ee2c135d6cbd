"""What a torchx user does with a Slurm cluster, run by the client virtualenv's Python.

    python torchx_session.py PORT      (in the job folder; SLURM_CONF and PATH aim at the cluster)

``torchx run -s slurm dist.ddp -j 2x2`` trains a tiny model with PyTorch DDP (gloo, CPU) on
two nodes, two processes each: torchx submits one heterogeneous-job component per node and
runs torchrun in each with ``srun A : B``.  Then ``status``, ``log``, ``list`` and, for a second
run, ``cancel``.  Prints one JSON object: what the user saw.  Nothing here imports minislurm.
"""

import json
import re
import subprocess
import sys
import time

TRAIN = '''
import json, os
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(64, 4)
y = x.sum(1, keepdim=True)
for _ in range(30):
    opt.zero_grad()
    loss = ((model(x[rank::world]) - y[rank::world]) ** 2).mean()
    loss.backward()
    opt.step()
w = model.module.weight.detach().clone()
every = [torch.zeros_like(w) for _ in range(world)]
dist.all_gather(every, w)
print("RESULT " + json.dumps({"rank": rank, "world": world, "local_rank": int(os.environ["LOCAL_RANK"]),
                              "node": os.environ["SLURMD_NODENAME"], "loss": loss.item(),
                              "same_weights": all(torch.equal(w, v) for v in every)}), flush=True)
dist.destroy_process_group()
'''
SLEEP = "import time\ntime.sleep(600)\n"
DONE = {"SUCCEEDED", "FAILED", "CANCELLED"}


def torchx(*args, check=True):
    r = subprocess.run(["torchx", *args], capture_output=True, text=True, timeout=120)
    if check and r.returncode != 0:
        raise SystemExit(f"torchx {' '.join(args)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r


def state(handle):
    m = re.search(r"State: (\w+)", torchx("status", handle).stdout)
    return m.group(1) if m else None


def wait(handle, want, timeout=150):
    deadline, seen = time.time() + timeout, []
    while time.time() < deadline:
        now = state(handle)
        if now and (not seen or seen[-1] != now):
            seen.append(now)
        if now in want:
            return seen
        time.sleep(1)
    raise SystemExit(f"{handle} still {seen} after {timeout} s")


def run(script, port):
    r = torchx("run", "--scheduler", "slurm", "--scheduler_args", "partition=gpu,time=10", "dist.ddp",
               "-j", "2x2", "--script", script, "--rdzv_port", str(port))
    return r.stdout.strip().splitlines()[-1]


def main(port):
    with open("train.py", "w") as f:
        f.write(TRAIN)
    with open("sleep.py", "w") as f:
        f.write(SLEEP)
    handle = run("train.py", port)
    app_id = handle.rsplit("/", 1)[1]
    states = wait(handle, DONE)
    described = torchx("status", handle).stdout
    log = torchx("log", "--streams", "stdout", handle).stdout
    results = sorted((json.loads(line.split("RESULT ", 1)[1]) for line in log.splitlines() if "RESULT " in line),
                     key=lambda r: r["rank"])
    queue = subprocess.run(["sacct", "-X", "-n", "-P", "-j", app_id, "-o", "JobID,JobName,State,NodeList"],
                           capture_output=True, text=True, check=True).stdout.split()

    second = run("sleep.py", port + 1)
    second_id = second.rsplit("/", 1)[1]
    running = wait(second, {"RUNNING"} | DONE)
    torchx("cancel", second)
    deadline = time.time() + 60
    while subprocess.run(["squeue", "-h", "-j", second_id], capture_output=True, text=True).stdout.strip():
        if time.time() > deadline:
            raise SystemExit(f"{second_id} still queued after cancel")
        time.sleep(0.5)
    listed = {}
    for line in torchx("list", "-s", "slurm").stdout.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0].startswith("slurm://"):
            listed[words[0].rsplit("/", 1)[1]] = words[1]
    return {"handle": handle, "app_id": app_id, "states": states, "status": described, "results": results,
            "sacct": queue, "second": second_id, "second_states": running, "list": listed}


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]))))
