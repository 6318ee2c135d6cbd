"""The built book in headless Chromium, with no network but localhost.

The pages are served from ``book/_build/html`` by a local HTTP server and opened by
``browser_check.mjs`` (playwright-core driving Debian's ``/usr/bin/chromium``), which refuses every
request that leaves localhost and blocks DNS.  The checks: nothing was fetched from elsewhere,
no script failed, every embedded widget was rebuilt from its saved state with its chart image,
the static charts and the MathJax formulas rendered.  Screenshots and the JSON report are kept in
``out/browser/`` (or ``$MINISLURM_ARTIFACTS``) as test artifacts.

Without a built book, chromium, node or playwright-core the tests skip, unless
``MINISLURM_REQUIRE_BROWSER=1`` (set by ``.ci/run``), where they fail instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytestmark = pytest.mark.daemons  # a web server and headless chromium

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "book" / "_build" / "html"
SCRIPT = Path(__file__).with_name("browser_check.mjs")

# page -> (widgets the page embeds, has math)
PAGES = {
    "intro.html": (0, False),
    "01-why-slurm.html": (0, False),
    "02-batch-jobs.html": (0, False),
    "03-gpus-gres.html": (1, False),
    "04-srun-distributed.html": (1, False),
    "05-priority-fairshare.html": (1, True),
    "06-backfill.html": (1, False),
    "07-node-failures.html": (0, False),
    "08-at-scale.html": (2, True),
    "09-real-slurm.html": (0, False),
    "10-daily-work.html": (0, False),
    "labs.html": (0, False),
}
# pydata-sphinx-theme logs this on a first visit, when no light/dark preference is stored yet.
BENIGN_CONSOLE = ("Got invalid theme mode",)


def _need(ok: bool, why: str) -> None:
    if not ok:
        if os.environ.get("MINISLURM_REQUIRE_BROWSER") == "1":
            pytest.fail(why)
        pytest.skip(why)


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def report() -> dict:
    _need((SITE / "intro.html").is_file(), "the book is not built: run `make book`")
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    _need(Path(chromium).exists(), "no chromium: `apt-get install chromium` (Debian's package)")
    node = shutil.which("node")
    _need(node is not None, "no node: install Node.js")
    _need((ROOT / "node_modules" / "playwright-core").is_dir(), "no playwright-core: run `make book`")
    shots = Path(os.environ.get("MINISLURM_ARTIFACTS", ROOT / "out" / "browser"))
    shots.mkdir(parents=True, exist_ok=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(SITE)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        cfg = {"base": f"http://127.0.0.1:{server.server_address[1]}/", "pages": list(PAGES),
               "shots": str(shots), "chromium": chromium}
        run = subprocess.run([node, str(SCRIPT), json.dumps(cfg)], capture_output=True, text=True,
                             timeout=180, cwd=ROOT)
    finally:
        server.shutdown()
        server.server_close()
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout)
    (shots / "report.json").write_text(json.dumps(result, indent=2) + "\n")
    return result["pages"]


@pytest.mark.parametrize("page", PAGES)
def test_page_needs_nothing_but_localhost(report, page):
    r = report[page]
    assert r["external"] == [], f"requests that left localhost: {r['external'][:5]}"
    assert r["failed"] == [], f"requests that failed: {r['failed'][:5]}"


@pytest.mark.parametrize("page", PAGES)
def test_page_runs_without_script_errors(report, page):
    r = report[page]
    assert r["page_errors"] == []
    assert [m for m in r["console_errors"] if not m.startswith(BENIGN_CONSOLE)] == []
    assert r["broken_images"] == []


@pytest.mark.parametrize("page", [p for p, (w, _) in PAGES.items() if w])
def test_widgets_render_from_their_saved_state(report, page):
    r, expected = report[page], PAGES[page][0]
    assert r["widget_views_saved"] == expected
    assert r["unrendered_widget_placeholders"] == 0, r.get("wait_error")
    assert r["widget_controls"] >= 3 * expected  # sliders, buttons, number boxes
    # Each view's Output holds its first chart as an image, drawn by minislurm at build time.
    assert r["widget_images"] == expected, r.get("wait_error")
    assert all(w >= 400 and h >= 150 for w, h in r["widget_image_sizes"])


def test_chapter_charts_render(report):
    # The executed examples' figures (Gantt charts, wait curves, the checkpoint trade-off, the
    # live runs drawn from their own records).
    assert report["06-backfill.html"]["static_images"] >= 6
    assert report["08-at-scale.html"]["static_images"] >= 5  # and the reserved run's nodes over weeks
    assert report["03-gpus-gres.html"]["static_images"] >= 2  # packing and fragmentation figures
    assert report["01-why-slurm.html"]["static_images"] >= 1  # one job's requests through the parts
    assert report["02-batch-jobs.html"]["static_images"] >= 1  # the jobs' lives
    assert report["04-srun-distributed.html"]["static_images"] >= 1  # one srun's ranks, nodes and GPUs
    assert report["07-node-failures.html"]["static_images"] >= 1  # failure, requeue, resume
    assert report["09-real-slurm.html"]["static_images"] >= 1  # the twin's sessions, two replayed
    assert report["10-daily-work.html"]["static_images"] >= 1  # the chain of links


@pytest.mark.parametrize("page", [p for p, (_, math) in PAGES.items() if math])
def test_math_renders_with_the_vendored_mathjax(report, page):
    r = report[page]
    assert r["math_source"] > 0 and r["math_rendered"] == r["math_source"], r.get("math_error")


def test_screenshots_are_saved(report):
    for page, r in report.items():
        shot = Path(r["screenshot"])
        assert shot.is_file() and shot.stat().st_size > 20_000, page
