"""Atomic, exact and fenced checkpoints."""

import os

import pytest

torch = pytest.importorskip("torch")

from minislurm.train.checkpoint import CHECKPOINT, Checkpointer, Fenced  # noqa: E402


def test_round_trip_keeps_tensors_rng_and_metadata(tmp_path):
    ck = Checkpointer(tmp_path, job_id=7, incarnation=0)
    ck.claim()
    torch.manual_seed(3)
    rng = torch.get_rng_state()
    weights = {"w": torch.randn(4, 4)}
    ck.save({"model": weights, "step": 40, "rng": [rng, rng]})
    state = ck.load()
    assert torch.equal(state["model"]["w"], weights["w"]) and state["step"] == 40
    torch.set_rng_state(state["rng"][1])
    after = torch.rand(3)
    torch.set_rng_state(rng)
    assert torch.equal(torch.rand(3), after)
    assert state["meta"]["job_id"] == 7 and state["meta"]["restart_count"] == 0
    assert sorted(os.listdir(tmp_path)) == [CHECKPOINT, "incarnation"]  # no temporary file left


def test_a_replaced_incarnation_never_writes(tmp_path):
    old = Checkpointer(tmp_path, job_id=7, incarnation=0)
    old.claim()
    old.save({"step": 20})
    new = Checkpointer(tmp_path, job_id=7, incarnation=1)
    new.claim()
    with pytest.raises(Fenced):
        old.save({"step": 21})
    with pytest.raises(Fenced):
        old.claim()
    assert new.load()["step"] == 20
    new.save({"step": 40})
    assert new.load()["meta"]["restart_count"] == 1


def test_a_crash_mid_write_leaves_the_old_checkpoint(tmp_path, monkeypatch):
    ck = Checkpointer(tmp_path, job_id=1, incarnation=0)
    ck.claim()
    ck.save({"step": 1})

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", boom)
    with pytest.raises(OSError):
        ck.save({"step": 2})
    monkeypatch.undo()
    assert ck.load()["step"] == 1
    assert sorted(os.listdir(tmp_path)) == [CHECKPOINT, "incarnation"]


def test_the_next_link_of_a_chain_takes_the_folder_and_the_last_link_is_fenced(tmp_path):
    """A chain's links are new jobs sharing one run folder: link 2 (job 8) claims what job 7
    left and goes on from its checkpoint; job 7, should it still run somewhere, never writes."""
    first = Checkpointer(tmp_path, job_id=7, incarnation=1)
    first.claim()
    first.save({"step": 60})
    second = Checkpointer(tmp_path, job_id=8, incarnation=0)
    second.claim()
    assert second.load()["step"] == 60 and second.holder() == (8, 0)
    with pytest.raises(Fenced):
        first.save({"step": 61})
    second.save({"step": 80})
    assert Checkpointer(tmp_path, job_id=9, incarnation=0).load()["meta"]["job_id"] == 8
