"""The adversarial catalogue: for every lab and question, a wrong answer and (where the public check
leaves room) an answer that passes the public check and is still wrong; :func:`attacks` builds the
other kinds from them (a rebound helper, a monkeypatched module, an exception, an endless loop,
huge output, objects that claim to equal everything).  tests/grade/test_catalogue.py grades them.
"""

from __future__ import annotations

# lab -> question number -> (wrong answer, public-check-only answer or None)
CATALOGUE: dict[str, dict[int, tuple[str, str | None]]] = {
    "01-cluster-basics": {
        1: ('def can_take_work(state):\n    return state != "down*"',
            'def can_take_work(state):\n    return state == "idle"'),
        2: ('def to_hostlist(names):\n    return "gpu[" + ",".join(n[3:] for n in sorted(names)) + "]"',
            # right for sorted input only
            'def to_hostlist(names):\n    numbers = [int(n[3:]) for n in names]\n    runs = []\n'
            '    for x in numbers:\n        if runs and x == runs[-1][1] + 1:\n            runs[-1][1] = x\n'
            '        else:\n            runs.append([x, x])\n'
            '    parts = [f"{a:02d}" if a == b else f"{a:02d}-{b:02d}" for a, b in runs]\n'
            '    return f"gpu{parts[0]}" if len(numbers) == 1 else "gpu[" + ",".join(parts) + "]"'),
        3: ('my_options = "--gres=gpu:2"', 'my_options = "-N2 --gres=gpu:3"'),
        4: ('why = {"eval": "behind", "big": "never", "report": "dependency", "sweep": "busy"}\n'
            'big_fixed = "-N1 --gres=gpu:3 --time=10"',
            'why = {"eval": "busy", "big": "never", "report": "dependency", "sweep": "behind"}\n'
            'big_fixed = "-N1 --gres=gpu:3"'),
    },
    "02-batch-jobs": {
        1: ('def directives_read(script):\n    return [l for l in script.split("\\n") if l.strip().startswith("#SBATCH")]',
            'def directives_read(script):\n'
            '    return [l for l in script.split("\\n") if l.startswith("#SBATCH") and "requeue" not in l]'),
        2: ('def winner(script, env, cli):\n    return next((v for v in (script, env, cli) if v is not None), None)',
            'def winner(script, env, cli):\n'
            '    return {(120, 30, 45): 45, (120, 30, None): 30, (120, None, None): 120, (None, 30, 45): 45}'
            '.get((script, env, cli))'),
        3: ('never_starts = "-N3"\nrefused = "--gres=gpu:1 --cpus-per-task=64"',
            'never_starts = "-N3 --gres=gpu:4"\nrefused = "--gres=gpu:5"'),  # refused for its GPUs, not CPUs
        4: ('my_script = """#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=3\n#SBATCH --gpus-per-task=1\n'
            '#SBATCH --output=ranks-%j.out\nsrun --gpus-per-task=1 bash -c \'echo "rank $SLURM_PROCID on '
            '$SLURMD_NODENAME gpu $CUDA_VISIBLE_DEVICES"\'\n"""',
            # passes as a fresh cluster's first job: the output file is named after job 1, not %j
            'my_script = """#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-task=1\n'
            '#SBATCH --output=ranks-1.out\nsrun --gpus-per-task=1 bash -c \'echo "rank $SLURM_PROCID on '
            '$SLURMD_NODENAME gpu $CUDA_VISIBLE_DEVICES"\'\n"""'),
    },
    "03-gres-packing": {
        1: ("def stranded_gpus(free, want):\n    return sum(f % want for f in free) + 1",
            "def stranded_gpus(free, want):\n    return sum(f % want for f in free) if want == 4 else 0"),
        # None: when the queue starts in submission order it starts largest first too (every such
        # answer was tried); the hidden check is a safety net
        2: ('my_jobs = "3,5,6,2,8,4,3"', None),
        3: ('def best_order(nodes, jobs, want):\n    return "largest"',
            'def best_order(nodes, jobs, want):\n    return "submit" if nodes == "4,4" else "largest"'),
        # the GPUs on one node (waits); the public case's nodes named instead of the GPUs counted
        4: ('now_options = "--gres=gpu:4"', 'now_options = "-w gpu[01-02] --ntasks-per-node=2 --gres=gpu:2"'),
    },
    "04-srun-env": {
        1: ('def to_torch(env):\n    return {"RANK": int(env["SLURM_LOCALID"]), "LOCAL_RANK": int(env["SLURM_LOCALID"]),\n'
            '            "WORLD_SIZE": int(env["SLURM_NTASKS"]), "MASTER_ADDR": expand(env["SLURM_JOB_NODELIST"])[0]}',
            'def to_torch(env):\n    name, rest = env["SLURM_JOB_NODELIST"].split("[")\n'
            '    return {"RANK": int(env["SLURM_PROCID"]), "LOCAL_RANK": int(env["SLURM_LOCALID"]),\n'
            '            "WORLD_SIZE": int(env["SLURM_NTASKS"]), "MASTER_ADDR": name + rest.split("-")[0]}'),
        2: ('my_args = ["--nodes=2", "--ntasks-per-node=3", "--gres=gpu:4"]', None),
        3: ("def ranks_without_gpu(ntasks, gpus):\n    return list(range(gpus + 1, ntasks))",
            "def ranks_without_gpu(ntasks, gpus):\n    return list(range(4, ntasks))"),
        # every rank sees its node's four GPUs; right on four-GPU nodes only (eight-GPU nodes: one node)
        4: ('pair_options = "-N2 --ntasks-per-node=2 --gres=gpu:4"', 'pair_options = "-n4 --gpus-per-task=2"'),
    },
    "05-priority": {
        1: ("ablation_priority = round(1000 * 30 / (7 * 24))", None),
        2: ("my_weights = Weights(age=0, fairshare=1000, jobsize=250)",
            "my_weights = Weights(age=1000, fairshare=1000, jobsize=10000)"),
        3: ("longest_half_life_days = 4", None),
        # not enough to make way for the evaluation; so much that the background job goes first
        4: ('sweep_options = "--nice=100"', 'sweep_options = "--nice=5000"'),
    },
    "06-backfill": {
        1: ("def backfills(limit_min):\n"
            "    jobs = [replace(j, limit=limit_min * MIN, runtime=limit_min * MIN) if j.name == 'eval-long' else j\n"
            "            for j in AFTERNOON]\n"
            "    return 'eval-long' in run_scenario(jobs).backfilled\n\n"
            "max_limit_min = max(m for m in range(1, 241) if backfills(m)) + 1", None),
        2: ('my_jobs = [\n    LabJob("A", submit=0, nodes=1, gpus=4, limit=60 * MIN),\n'
            '    LabJob("F", submit=0, nodes=1, gpus=2, limit=30 * MIN),\n'
            '    LabJob("B", submit=60, nodes=2, gpus=4, limit=60 * MIN),\n'
            '    LabJob("D", submit=120, nodes=1, gpus=4, limit=20 * MIN),\n'
            '    LabJob("E", submit=180, nodes=1, gpus=2, limit=50 * MIN),\n]\nvictim = "A"',
            None),  # run_scenario refuses what the hidden checks guard against: no such answer
        3: ("window_start_h = 72", None),
        # no limit: no backfill; as the lab cluster's root, jump the queue (big loses its promise)
        4: ('eval_options = ""', 'eval_options = "--priority=100000"'),
    },
    "07-failures": {
        1: ("def steps_redone(crash_step, every):\n    return crash_step % every + 1",
            "def steps_redone(crash_step, every):\n    return crash_step % every if every in (5, 250) else 0"),
        2: ('states = ["NODE_FAIL", "COMPLETED"]\nrestarts = 1',
            'states = ["NODE_FAIL", "NODE_FAIL", "COMPLETED"]\nrestarts = 3'),
        3: ("def warning_window(limit_min, sig_s):\n    latest = limit_min * 60 - sig_s\n"
            "    return (max(0, latest - 61), latest)",
            "def warning_window(limit_min, sig_s):\n    latest = limit_min * 60 - sig_s\n"
            "    return (latest - 60, latest)"),
        4: ("safe_script = fragile_script",
            # requeued and logged in append mode, but it starts over: no checkpoint
            'safe_script = fragile_script.replace("#SBATCH --no-requeue", "#SBATCH --requeue\\n#SBATCH --open-mode=append")'),
    },
    "08-at-scale": {
        1: ("fifo_nodes = 80", "fifo_nodes = 112"),
        2: ("points = checkpoint_sweep(FailureSetup(), mtbf_h=500)\n"
            "best_interval_s = sorted(points, key=lambda p: p.total_gpu_h(120))[1].interval_s", None),
        3: ("young_2node_h = math.sqrt(2 * 120 * (500 * 3600 / 2)) / 60",
            "young_2node_h = math.sqrt(2 * 120 * 500 * 3600) / 3600"),
        # the lemon excluded, but the requeued run's log overwrites the first attempt's
        4: ('run_options = "--exclude=gpu03"', None),
    },
    "08b-scenario-1": {
        1: ("def job_mtbf_h(node_mtbf_h, nodes):\n    return node_mtbf_h / (nodes + 1)", None),
        2: ("interval_s = math.sqrt(2 * 300 * 6_300 * 3600)", "interval_s = 1000.0"),
        # chapter 8's 21 one-day links, as if all of a link's time trained; the public case hard-coded
        3: ('def chain_options(train_days, max_time_h, startup_h):\n'
            '    return ["--array=0-20%1", "--time=1-00:00:00"]',
            'def chain_options(train_days, max_time_h, startup_h):\n'
            '    return ["--array=0-21%1", "--time=1-00:00:00"]'),
        # the interval chapter 8 found best for 60 s checkpoints; too often for 600 s ones
        4: ("best_interval_min = 15", "best_interval_min = 25"),
    },
    "10-daily-work": {
        1: ('sweep_array = "1-32%8"', 'sweep_array = "0-31%4"'),
        2: ('def link_options(i):\n    return "--dependency=afterany"',
            'def link_options(i):\n    return "--array=1-3%1"'),
        # the chapter's table read without the jobs' details; a letter for every job but all one
        3: ('fixes = {"big": "a", "eval": "a", "llm": "b", "probe": "b", "report": "c", "sweep": "d", "tune": "b"}',
            'fixes = dict.fromkeys(["big", "eval", "llm", "probe", "report", "sweep", "tune"], "b")'),
        4: ('smoke_options = "-N2 --ntasks-per-node=2 --gres=gpu:2"', 'smoke_options = "-N2 --gpus-per-task=1"'),
        # right-sized, but each task of the step that runs prep.py gets one CPU (srun does not inherit -c)
        5: ('prep_script = "#!/bin/bash\\n#SBATCH --cpus-per-task=3\\n#SBATCH --mem=600M\\nsrun python prep.py\\n"',
            None),
    },
}

# Objects that claim to equal, contain and be anything: what a check run in the student's kernel
# would compare its references with after the submission rebinds or patches them.
YES = '''
class _Yes:
    def __eq__(self, other):
        return True
    __le__ = __ge__ = __eq__
    def __ne__(self, other):
        return False
    __lt__ = __gt__ = __ne__
    def __bool__(self):
        return True
    def __call__(self, *a, **k):
        return self
    def __getattr__(self, name):
        return self
    def __getitem__(self, key):
        return self
    def __contains__(self, item):
        return True
    def __iter__(self):
        return iter(())
    def __hash__(self):
        return 0
    def __mod__(self, other):
        return 0
'''

REBIND = YES + '''
for _name in [n for n in list(globals()) if not n.startswith("_") and n not in {answers!r}]:
    globals()[_name] = _Yes()  # every helper of the notebook: rank, run_scenario, pack, predict, ...
'''

MONKEYPATCH = YES + '''
import sys as _sys
for _mod_name, _mod in list(_sys.modules.items()):
    if _mod is None or not _mod_name.startswith("minislurm.") or _mod_name.startswith("minislurm.grade"):
        continue
    for _attr in [a for a in vars(_mod) if not a.startswith("__")]:
        try:
            setattr(_mod, _attr, _Yes())  # minislurm.lab.queue.rank, ...scenario.run_scenario, ...
        except Exception:
            pass
'''

HUGE = 'print("x" * 3_000_000)\nprint(bytes(range(256)) * 1000)\n'


def attacks(lab: str, worked: list[str], answers: list[str]) -> dict[str, list[str]]:
    """Submission name -> its answer cells: the worked answers, and one submission per kind of
    wrong answer with every question of the lab answered that way."""
    wrong = [CATALOGUE[lab][n][0] for n in sorted(CATALOGUE[lab])]
    assert len(wrong) == len(worked), f"{lab}: the catalogue needs an entry for every question"
    last = len(wrong) - 1
    yes_answers = "\n".join(f"{a} = _Yes()" for a in answers)
    return {
        "worked": worked,
        "off-by-one": wrong,
        "public-only": [p or w for w, p in (CATALOGUE[lab][n] for n in sorted(CATALOGUE[lab]))],
        # the rebinding and the patching come after every answer, as if the checks ran at the end
        "rebound": wrong[:last] + [wrong[last] + "\n" + REBIND.format(answers=sorted(answers))],
        "monkeypatched": wrong[:last] + [wrong[last] + "\n" + MONKEYPATCH],
        "raises": ['raise RuntimeError("not done yet")'] * len(wrong),
        "loops": ["while True:\n    pass"] * len(wrong),
        "huge-output": [HUGE + w for w in wrong],
        "equals-anything": [YES] * last + [YES + yes_answers],
    }
