"""minislurm next to Slurm 22.05 (minislurm.lab.conformance): the commands a recorded session
types, its lines coloured by a replay, and a live replay of a session on minislurm."""

from __future__ import annotations

import pytest
from matplotlib.colors import to_hex

from minislurm.lab.conformance import (DIFFERENT, NOT_REPLAYED, SAME, commands_typed, conformance_figure,
                                       load_sessions, recorded_sessions, replay)

SESSIONS = load_sessions()


def test_a_script_counts_the_commands_it_types_but_not_its_comments_or_waits():
    script = """# scancel everything first
j=$(sbatch --parsable --wrap 'srun hostname'); upto '[ "$(squeue -h -j '$j' -o %T)" = RUNNING ]'
squeue -j $j; scontrol show job $j | grep -o JobState; upto "[ -n \\"\\$(sacct -n -j $j)\\" ]"
sbatch_wrapper.sh; ./srun-like; scancel $j
"""
    counts = commands_typed(script)
    assert {c: n for c, n in counts.items() if n} == {"sbatch": 1, "srun": 1, "squeue": 1, "scontrol": 1,
                                                      "scancel": 1}


def test_each_recorded_line_is_coloured_by_what_the_replay_printed_in_its_place():
    lines = SESSIONS.recorded("arrays_and_sacct").splitlines()
    changed = "\n".join(lines[:3] + ["something else"] + lines[4:]) + "\n"
    fig = conformance_figure(SESSIONS, {"arrays_and_sacct": changed, "time_limits": SESSIONS.recorded("time_limits")})
    bars = fig.axes[1]

    def colours(name):
        return [to_hex(p.get_facecolor()) for p in bars.patches if p.get_gid() == f"lines:{name}"]

    replayed = colours("arrays_and_sacct")
    assert len(replayed) == len(lines) and replayed[3] == DIFFERENT and replayed.count(SAME) == len(lines) - 1
    assert set(colours("time_limits")) == {SAME}
    assert set(colours("jobs")) == {NOT_REPLAYED}
    counts = {t.get_gid(): t.get_text() for t in bars.texts}
    assert counts["count:arrays_and_sacct"] == f"{len(lines) - 1} of {len(lines)} the same"
    assert counts["count:jobs"] == str(len(SESSIONS.recorded("jobs").splitlines()))
    grid = fig.axes[0]
    assert [t.get_text() for t in grid.get_yticklabels()] == recorded_sessions(SESSIONS)


@pytest.mark.daemons
def test_a_replayed_session_prints_what_slurm_printed():
    out = replay(SESSIONS, ["time_limits"])
    assert out == {"time_limits": SESSIONS.recorded("time_limits")}
