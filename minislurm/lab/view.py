"""The shared shape of every lab view: controls, an Output for the figure, and a redraw.

A view holds widgets and nothing else of its own: on every change it asks a model function
(in minislurm) for a result, keeps it in ``self.result``, draws ``self.fig`` from it and shows
the PNG in ``self.out``.  Tests set a control's ``.value`` and assert on ``result`` and
``fig``; they never need a browser or a kernel.

The figure goes into the Output as a PNG image, not as a live matplotlib figure: that is what
a notebook saves, what the book's static pages can show, and it works with any backend.
"""

from __future__ import annotations

import html

import ipywidgets as widgets
from IPython.display import Image, clear_output, display

from minislurm.lab.figures import LabFigure


class View:
    """Base class: subclasses build controls, then call :meth:`_layout` and :meth:`refresh`."""

    widget: widgets.Widget

    def __init__(self) -> None:
        self.out = widgets.Output(layout=widgets.Layout(min_height="120px"))
        self.table = widgets.HTML()
        self.fig: LabFigure | None = None
        self.png: bytes | None = None
        self.error: str | None = None
        self.result = None

    def _observe(self, *controls: widgets.Widget) -> None:
        for c in controls:
            c.observe(lambda _change: self.refresh(), names="value")

    def refresh(self) -> None:
        """Recompute and redraw; a model error is shown in place of the figure, not raised."""
        try:
            self.result = self.compute()
        except ValueError as err:  # an impossible request: say why, as Slurm would
            self.error = str(err)
            self.table.value = f"<p style='color:#b00'><b>error:</b> {html.escape(self.error)}</p>"
            return
        self.error = None
        self.table.value = self.describe(self.result)
        fig = self.draw(self.result)
        if fig is not None:  # a view may have nothing to draw for some results (WhyWaiting's live answers)
            self._show(fig)

    def compute(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def draw(self, result) -> LabFigure | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self, result) -> str:
        return ""

    def _show(self, fig: LabFigure) -> None:
        self.fig = fig
        self.png = fig.png()
        with self.out:
            clear_output(wait=True)
            display(Image(data=self.png, format="png"))

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


def html_table(header: list[str], rows: list[list[object]], caption: str = "") -> str:
    """A small HTML table (escaped); numbers right-aligned."""
    def cell(tag: str, x: object) -> str:
        align = "right" if isinstance(x, (int, float)) else "left"
        return f"<{tag} style='padding:2px 8px;text-align:{align}'>{html.escape(str(x))}</{tag}>"

    head = "".join(cell("th", h) for h in header)
    body = "".join("<tr>" + "".join(cell("td", x) for x in row) + "</tr>" for row in rows)
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return (f"<table class='minislurm-lab' style='border-collapse:collapse;font-size:90%'>{cap}"
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
