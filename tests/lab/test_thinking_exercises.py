"""The labs' exercises whose answer is on no page (issue 25): the learner writes sbatch options, a
script or a command line for a situation the chapter did not show, and the checks run it on a
live cluster and judge what it did.

For each such exercise the worked answer passes its check and hidden checks, and typical wrong
answers fail with a message that names what was wrong and what was seen: the text the grader's
failure file hands back to the student (``minislurm.grade.referee.why``).  The checks run as the
referee runs them, each check cell in order in one namespace, after the lab's set-up cell and the
answer (which run in the student's kernel when graded).
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from minislurm.grade.exercises import read_exercises
from minislurm.grade.referee import why

pytestmark = pytest.mark.daemons  # the checks start live clusters

LABS = Path(__file__).resolve().parents[2] / "labs"

WHY = 'why = {"eval": "busy", "big": "never", "report": "dependency", "sweep": "behind"}\n'  # lab 1's reasons, right

# lab 2's batch script, with what varies left open
RANKS = ('my_script = """#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node={n}\n#SBATCH {gpus}\n'
         '#SBATCH --output={out}\nsrun {srun}bash -c \'echo "rank $SLURM_PROCID on $SLURMD_NODENAME gpu '
         '$CUDA_VISIBLE_DEVICES"\'\n"""')

# lab 7's job as the lab gives it: not requeued, no checkpoint, its log truncated
FRAGILE = """#!/bin/bash
#SBATCH --job-name=sum
#SBATCH --output=%x-%j.out
#SBATCH --no-requeue
total=0
for step in $(seq 1 20); do
    sleep 0.2
    total=$((total + step))
    echo "step $step"
done
echo $total > result.txt
"""


def worked(lab: str, n: int) -> str:
    nb = nbformat.read(LABS / f"{lab}.ipynb", as_version=4)
    return nb.cells[read_exercises(nb)[n].answer].source


# (lab, exercise) -> [(a wrong answer, what its failure message must say)]
WRONG = {
    ("01-cluster-basics", 4): [
        # big as it was: three nodes on a two-node cluster
        (WHY + 'big_fixed = "-N3 --gres=gpu:1 --time=10"', "big_fixed waits with reason PartitionNodeLimit"),
        (WHY + 'big_fixed = "-N1 --gres=gpu:3"', "big_fixed's limit is UNLIMITED, not big's 10 minutes"),
        (WHY + 'big_fixed = "-N1 --gres=gpu:2 --time=10"', "big_fixed holds 2 GPUs in all, not three"),
        (WHY.replace('"eval": "busy"', '"eval": "behind"') + 'big_fixed = "-N1 --gres=gpu:3 --time=10"',
         "not what eval's reason means"),
    ],
    ("02-batch-jobs", 4): [
        (RANKS.format(n=3, gpus="--gpus-per-task=1", out="ranks-%j.out", srun="--gpus-per-task=1 "),
         "lines for ranks [0, 1, 2, 3, 4, 5], not one for each of the ranks 0-7"),
        # GPUs per node: every task sees its node's four
        (RANKS.format(n=4, gpus="--gres=gpu:4", out="ranks-%j.out", srun=""), "sees GPUs 0,1,2,3: a task should see one"),
        # right as a fresh cluster's first job only
        (RANKS.format(n=4, gpus="--gpus-per-task=1", out="ranks-1.out", srun="--gpus-per-task=1 "),
         "hidden check: no rank lines in ranks-<job id>.out"),
    ],
    ("03-gres-packing", 4): [
        ('now_options = "--gres=gpu:4"', "waits with reason Resources while 2 on gpu01, 2 on gpu02 GPUs are free"),
        ('now_options = "-N2 --gres=gpu:2"', "it ran 2 tasks, not 4"),
        ('now_options = "-n4 --gres=gpu:2"', "on gpu01 it runs 4 tasks with 2 GPUs"),
        # right on the public case only: the nodes named, not the GPUs counted
        ('now_options = "-w gpu[01-02] --ntasks-per-node=2 --gres=gpu:2"', "hidden check: it did not start"),
    ],
    ("04-srun-env", 4): [
        # chapter 4's layout: every rank sees all of its node's GPUs
        ('pair_options = "-N2 --ntasks-per-node=2 --gres=gpu:4"', "rank 0 on gpu01 sees GPUs 0,1,2,3, not two of its own"),
        ('pair_options = "-N2 --ntasks-per-node=4 --gpus-per-task=1"', "it ran 8 ranks, not 4"),
        # right on four-GPU nodes only: on eight-GPU nodes the four ranks fit on one
        ('pair_options = "-n4 --gpus-per-task=2"', "hidden check: ranks per node: {'gpu01': 4}"),
    ],
    ("05-priority", 4): [
        ('sweep_options = "--nice=100"', "the sweep started before the evaluation: their priorities were"),
        ('sweep_options = "--hold"', "the sweep did not run after the evaluation: it waits with reason JobHeldUser"),
        ('sweep_options = "--begin=now+600"', "waits with reason BeginTime"),
        ('sweep_options = "--nice=5000"', "hidden check: the background job (nice 1000) started before the sweep"),
    ],
    ("06-backfill", 4): [
        ('eval_options = ""', "the evaluation did not start: it waits with reason Priority (its limit: UNLIMITED)"),
        ('eval_options = "--time=15"', "it waits with reason Priority (its limit: 15 minutes)"),
        ('eval_options = "--time=3"', "its limit of 3 minutes is shorter than the four minutes it runs"),
        # as the lab cluster's root (an operator) --priority jumps the queue: big loses its promise
        ('eval_options = "--priority=100000"', "hidden check: big's promised start moved: no promised start any more"),
    ],
    ("07-failures", 4): [
        (f"safe_script = {FRAGILE!r}", "the job was not requeued when its node failed: it ended NODE_FAIL"),
        ("safe_script = " + repr(FRAGILE.replace("--no-requeue", "--requeue\n#SBATCH --open-mode=append")),
         "hidden check: the requeued run started over from step 1"),
        # checkpointed and requeued, but the second run truncates the log
        (worked("07-failures", 4).replace("#SBATCH --open-mode=append\n", ""),
         "hidden check: the log does not show both runs"),
    ],
    ("08-at-scale", 4): [
        ('run_options = ""', "it runs on gpu[01-04], gpu03 among them"),
        ('run_options = "--exclude=gpu03"', "the first attempt's lines are gone"),
        ('run_options = "--exclude=gpu03 --open-mode=append --no-requeue"', "the job ended NODE_FAIL, not requeued"),
        # the right nodes by name: the requeued run waits for the crashed one
        ('run_options = "-w gpu[01-02,04-05] --open-mode=append"', "the requeued run did not run: it waits with reason"),
    ],
    ("08b-scenario-1", 3): [
        # chapter 8's chain: 21 one-day links, as if every hour of a link trained
        ('def chain_options(train_days, max_time_h, startup_h):\n'
         '    return ["--array=0-20%1", "--time=1-00:00:00", "--requeue"]', "21 links of 24 h train 483 h"),
        ('def chain_options(train_days, max_time_h, startup_h):\n'
         '    return ["--array=0-21", "--time=1-00:00:00"]', "ran at the same time"),
        ('def chain_options(train_days, max_time_h, startup_h):\n'
         '    return ["--array=0-10%1", "--time=2-00:00:00"]', "waits with reason PartitionTimeLimit"),
        ('def chain_options(train_days, max_time_h, startup_h):\n'
         '    return ["--time=1-00:00:00", "--dependency=singleton"]', "a single job, not a job array"),
    ],
    ("10-daily-work", 3): [
        # the chapter's table read without the details: "Priority: nothing", "PartitionTimeLimit: shorter"
        ('fixes = {"big": "a", "eval": "a", "llm": "b", "probe": "b", "report": "c", "sweep": "d", "tune": "b"}',
         "backfill"),
        ('fixes = {"big": "a", "eval": "b", "llm": "e", "probe": "e", "report": "c", "sweep": "a", "tune": "a"}',
         "probe runs two hours"),
    ],
    ("10-daily-work", 4): [
        # chapter 10's smoke test: every task sees both GPUs of its node
        ('smoke_options = "-N2 --ntasks-per-node=2 --gres=gpu:2"', "rank 0 sees GPUs 0,1"),
        ('smoke_options = "-N2 --gpus-per-task=1"', "ran over 2 ranks"),
    ],
    ("10-daily-work", 5): [
        # right-sized, but srun's step gets one CPU (22.05 does not pass --cpus-per-task on)
        ('prep_script = "#!/bin/bash\\n#SBATCH --cpus-per-task=3\\n#SBATCH --mem=600M\\nsrun python prep.py\\n"',
         "got 1 of the job's 3 CPUs"),
        ('prep_script = "#!/bin/bash\\n#SBATCH --cpus-per-task=8\\n#SBATCH --mem=6G\\nsrun -c 8 python prep.py\\n"',
         "holds 8 CPUs for 3 workers"),
        ('prep_script = "#!/bin/bash\\n#SBATCH --cpus-per-task=3\\n#SBATCH --mem=200M\\nsrun -c 3 python prep.py\\n"',
         "asked for 200 MB and prep.py used"),
        ('prep_script = "#!/bin/bash\\n#SBATCH --cpus-per-task=3\\n#SBATCH --mem=4G\\nsrun -c 3 python prep.py\\n"',
         "more than twice"),
    ],
}


def judge(lab: str, n: int, answer: str) -> str | None:
    """Run the answer, then exercise ``n``'s checks and hidden checks as the referee does; the
    failure message (None: every check passed)."""
    nb = nbformat.read(LABS / f"{lab}.ipynb", as_version=4)
    ex = read_exercises(nb)[n]
    ns: dict = {}
    exec(next(c.source for c in nb.cells if c.cell_type == "code"), ns)  # noqa: S102 - the lab's set-up
    exec(answer, ns)  # noqa: S102
    for test in ex.tests:
        try:
            exec(compile(test.source, f"<check of {ex.name}>", "exec"), ns)  # noqa: S102
        except Exception as e:  # noqa: BLE001 - the referee fails the question on any error
            return why(e, test.hidden)
    return None


@pytest.mark.parametrize("lab, n", sorted(WRONG))
def test_the_worked_answer_passes(lab, n):
    assert judge(lab, n, worked(lab, n)) is None


@pytest.mark.parametrize("lab, n, answer, says",
                         [(lab, n, a, s) for (lab, n), cases in sorted(WRONG.items()) for a, s in cases])
def test_a_wrong_answer_fails_saying_what_is_wrong(lab, n, answer, says):
    message = judge(lab, n, answer)
    assert message is not None, "a wrong answer passed"
    assert says in message, message


def test_every_lab_has_such_an_exercise_with_two_wrong_answers_or_more():
    assert {lab for lab, _ in WRONG} >= {p.stem for p in LABS.glob("*.ipynb")}
    assert all(len(cases) >= 2 for cases in WRONG.values())
