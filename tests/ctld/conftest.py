"""tests/ctld: the controller's parts in-process; apikit.py beside this file serves its API."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
