"""Small fixes to jupyter-book 1.x's HTML, so a built page loads with no script errors.

1. sphinx-thebe registers its inline configuration script twice; the browser then rejects
   the second ``const THEBE_JS_URL`` as a SyntaxError.  Keep the first of identical scripts.
2. The widget manager (@jupyter-widgets/html-manager 1.x) typesets math inside widgets with
   MathJax 2's ``MathJax.Hub.Queue``, but the book loads MathJax 3.  A deferred shim, run
   after MathJax 3 has defined its global, maps that call onto ``MathJax.typesetPromise``.

The browser test (tests/book/test_browser.py) fails on any page error, so a regression in
either shows up there.
"""

from __future__ import annotations


def _dedupe_scripts(app, pagename, templatename, context, doctree) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    seen: set = set()
    kept = []
    for js in scripts:
        attrs = getattr(js, "attributes", {}) or {}
        # An inline script is registered once with filename None and once with "".
        key = (getattr(js, "filename", str(js)) or "", tuple(sorted((k, str(v)) for k, v in attrs.items())))
        if key not in seen:
            seen.add(key)
            kept.append(js)
    context["script_files"] = kept


def setup(app):
    app.connect("html-page-context", _dedupe_scripts)
    # After MathJax (Sphinx adds it deferred, priority 500) and before the page's own scripts run.
    app.add_js_file("mathjax2-shim.js", loading_method="defer", priority=800)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
