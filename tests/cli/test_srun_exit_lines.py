"""srun's ``NODE: task N: Exited with exit code C`` lines, in the order the twin's 22.05.8
printed them (tests/live/sessions/divergences.out): as the tasks end, not by task id."""

from __future__ import annotations

from minislurm.cli.launch import Ended, _worst

NODES = {0: "c1", 1: "c1", 2: "c2", 3: "c2"}


def said(capsys, *bursts) -> list[str]:
    ended = Ended()
    for burst in bursts:
        for task, code, sig in burst:
            ended.add(task, code, sig)
        ended.say(NODES)
    return capsys.readouterr().err.splitlines()


def test_tasks_ending_apart_get_a_line_each_first_ended_first(capsys):
    assert said(capsys, [(3, 4, 0)], [(2, 3, 0)], [(1, 2, 0)], [(0, 1, 0)]) == [
        "srun: error: c2: task 3: Exited with exit code 4", "srun: error: c2: task 2: Exited with exit code 3",
        "srun: error: c1: task 1: Exited with exit code 2", "srun: error: c1: task 0: Exited with exit code 1"]


def test_tasks_of_a_node_ending_together_share_a_line(capsys):
    assert said(capsys, [(2, 3, 0), (0, 3, 0), (3, 3, 0), (1, 3, 0), (1, 0, 0)]) == [
        "srun: error: c2: tasks 2-3: Exited with exit code 3", "srun: error: c1: tasks 0-1: Exited with exit code 3"]


def test_a_clean_exit_says_nothing_and_the_worst_code_wins():
    ended = Ended()
    ended.add(0, 0, 0)
    assert ended.patience() is None
    assert _worst({0: (0, 0), 1: (2, 0), 2: (0, 15)}, []) == 143
    assert _worst({0: (0, 0)}, ["c2"]) == 1
