"""Skip one slow import that minislurm never uses, in every process that imports jsonschema.

jsonschema registers its optional "iri" format check by importing ``rfc3987_syntax`` (Jupyter's
packages install it), which compiles some forty Earley grammars at import: about a second on an
idle 2-core machine, over ten on a busy one.  The controller pays it at every start (its API
validates requests with jsonschema) and grading at every notebook it reads (nbformat imports
jsonschema); no schema of minislurm's or of nbformat's uses that format.  Blocking the import
(``sys.modules[name] = None`` makes it raise ImportError, which jsonschema expects) leaves that
one format unchecked and nothing else changed.
"""

from __future__ import annotations

import sys

SLOW_UNUSED = ("rfc3987_syntax",)


def skip_slow_imports() -> None:
    """Call before the first import of jsonschema (or of nbformat)."""
    for name in SLOW_UNUSED:
        sys.modules.setdefault(name, None)
