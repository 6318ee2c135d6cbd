"""One job's path through the parts (minislurm.lab.journey): what the script and its tasks print
is read back, and a live run's records line up in the order Slurm's requests must come."""

from __future__ import annotations

import pytest

from minislurm.lab.journey import SCRIPT, follow, journey_figure, read_output
from minislurm.lab.terminal import lab_cluster

OUTPUT = """script starts on gpu01 at 100.25
task 1 starts on gpu01 at 100.50
task 2 starts on gpu02 at 100.52
task 0 starts on gpu01 at 100.51
task 3 starts on gpu02 at 100.53
task 2 ends at 101.5
task 0 ends at 101.6
task 1 ends at 101.55
task 3 ends at 101.7
script ends at 101.9
"""


def test_the_script_and_each_task_say_where_and_when_they_ran():
    node, script, tasks = read_output(OUTPUT)
    assert (node, script) == ("gpu01", (100.25, 101.9))
    assert tasks == {0: ("gpu01", 100.51, 101.6), 1: ("gpu01", 100.5, 101.55), 2: ("gpu02", 100.52, 101.5),
                     3: ("gpu02", 100.53, 101.7)}


@pytest.mark.daemons
def test_a_live_job_passes_through_each_part_in_order():
    with lab_cluster(nodes=2, gpus_per_node=1, quiet=True) as sh:
        sh.write("hello.sh", SCRIPT, show=False)
        j = follow(sh, "sbatch hello.sh")
    assert (j.state, j.nodes, j.script_node) == ("COMPLETED", "gpu[01-02]", "gpu01")
    assert {r: node for r, (node, _, _) in j.tasks.items()} == {0: "gpu01", 1: "gpu01", 2: "gpu02", 3: "gpu02"}
    first = min(s for _, s, _ in j.tasks.values())
    last = max(e for _, _, e in j.tasks.values())
    # sbatch's request, the start, the script, its step and tasks, and the ends, one inside the other
    assert j.sbatch[0] <= j.submit <= j.sbatch[1] and j.submit <= j.start <= j.script[0] <= j.step[0] <= first
    assert last - first >= 1  # the tasks' second of work
    assert last <= j.step[1] <= j.script[1] <= j.end
    fig = journey_figure(j)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "sbatch", "slurmctld", "slurmd gpu01", "srun (in the script)", "tasks on gpu01", "slurmd gpu02",
        "tasks on gpu02"]
    labels = [t for t in ax.texts if (t.get_gid() or "").startswith("label:")]
    assert {t.get_text() for t in labels} == {
        "REQUEST_SUBMIT_BATCH_JOB", "REQUEST_BATCH_JOB_LAUNCH", "REQUEST_JOB_STEP_CREATE", "REQUEST_LAUNCH_TASKS",
        "MESSAGE_TASK_EXIT", "REQUEST_STEP_COMPLETE", "REQUEST_COMPLETE_BATCH_SCRIPT"}
    boxes = [t.get_window_extent() for t in labels]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
