"""A long wait in a book or lab cell says what it waits for instead of staying silent."""

from __future__ import annotations

import time

import pytest

from minislurm.lab import terminal


def test_a_long_wait_prints_progress_and_a_short_one_does_not(monkeypatch, capsys):
    monkeypatch.setattr(terminal, "PROGRESS", 0.2)
    until = terminal.Terminal.until
    start = time.monotonic()
    assert until(None, lambda: time.monotonic() - start > 0.5, timeout=5, what="the thing") is True
    lines = capsys.readouterr().out.splitlines()
    assert 2 <= len(lines) <= 3 and lines[0] == "# still waiting for the thing (0 s)"
    assert until(None, lambda: "at once", timeout=5) == "at once" and capsys.readouterr().out == ""
    with pytest.raises(TimeoutError, match="waited 0.5 s for never"):
        until(None, lambda: False, timeout=0.5, what="never")
