"""The GRES packing model and its explorer, driven headlessly."""

from __future__ import annotations

import pytest

from minislurm.lab import GresPackingExplorer
from minislurm.lab.packing import PackJob, pack, parse_jobs, parse_nodes


def patches(view, prefix: str) -> list[str]:
    return [p.get_gid() for p in view.fig.axes[0].patches if (p.get_gid() or "").startswith(prefix)]


def test_parsers():
    assert parse_nodes("4x8") == [8, 8, 8, 8]
    assert parse_nodes("2x8, 4") == [8, 8, 4]
    assert parse_jobs("3,2x8") == [PackJob("j1", 3, 1), PackJob("j2", 8, 2)]
    with pytest.raises(ValueError, match="cannot read"):
        parse_nodes("eight")
    with pytest.raises(ValueError, match="1 to 16"):
        parse_nodes("32")


def test_first_fit_on_the_lowest_node_and_gpu_indices():
    r = pack([4, 4], parse_jobs("2,1,3,2"))
    assert r.owner == [["j1", "j1", "j2", None], ["j3", "j3", "j3", None]]
    assert r.placed["j3"].nodes == ("gpu02",) and r.placed["j3"].gpus == ((0, 1, 2),)
    # two GPUs are free, one per node: the 2-GPU job waits, as on the live cluster in chapter 3
    assert r.pending == {"j4": "Resources"} and r.free == [1, 1]
    assert r.stranded(2) == 2 and r.fits(2) == 0 and r.first_pending.name == "j4"


def test_stranded_gpus_and_rejection():
    r = pack([4, 4, 4, 4], parse_jobs("3,3,3,3,4,16"))
    assert r.rejected == {"j6": "Requested node configuration is not available"}
    assert r.pending == {"j5": "Resources"} and r.stranded(4) == 4 and r.stranded(1) == 0
    assert r.stranded_cells(4) == {(n, 3) for n in range(4)}
    assert pack([8], parse_jobs("1")).stranded(4) == 3  # 7 free: one 4-GPU job, 3 left over


def test_later_jobs_backfill_past_a_blocked_one():
    r = pack([8, 8, 8, 8], parse_jobs("2,4,3,6,1,2x8,4,8"))
    assert r.pending == {"j6": "Resources"}  # the two-node job waits for two whole nodes
    assert r.placed["j7"].backfilled and r.placed["j8"].backfilled and not r.placed["j1"].backfilled


def test_largest_first_uses_job_size_priority():
    mix = parse_jobs("3,2,6,5,2,8,4,3")
    submit, largest = pack([8] * 4, mix), pack([8] * 4, mix, order="largest")
    assert submit.stranded(4) == 3 and largest.stranded(4) == 1
    assert largest.owner[0] == ["j6"] * 8  # the 8-GPU job was considered first
    with pytest.raises(ValueError, match="order"):
        pack([8], mix, order="random")


def test_explorer_first_state():
    ex = GresPackingExplorer()
    assert ex.error is None and ex.result.pending == {"j7": "Resources"}
    assert len(patches(ex, "stranded:")) == 3 and len(patches(ex, "gpu:")) == 29
    assert "j7" in ex.table.value and "Resources" in ex.table.value and ex.png.startswith(b"\x89PNG")


def test_explorer_controls():
    ex = GresPackingExplorer()
    ex.order.value = "largest"
    assert ex.result.order == "largest" and ex.result.stranded(4) == 1
    ex.want.value = 1
    assert patches(ex, "stranded:") == [] and len(patches(ex, "free:")) == 1
    ex.jobs.value = "4,4,4,4,4,4,4,4"
    assert ex.result.busy == 32 and not ex.result.pending
    ex.nodes.value = "2x8,4"
    assert ex.result.capacity == [8, 8, 4] and ex.fig.axes[0].get_title().startswith("20 of 20")


def test_explorer_shows_input_errors():
    ex = GresPackingExplorer()
    ex.nodes.value = "lots"
    assert "cannot read node size" in ex.error and "error" in ex.table.value
    ex.nodes.value = "4x8"
    assert ex.error is None
