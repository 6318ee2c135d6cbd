"""Headless widget tests: no kernel, no browser.  Setting a control's ``.value`` runs the
view's observers synchronously, so tests assert on the model result and the figure."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import ipywidgets  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _close_widgets():
    yield
    ipywidgets.Widget.close_all()
