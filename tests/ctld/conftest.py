"""tests/ctld: the controller's parts in-process; apikit.py beside this file serves its API, ctldkit.py
runs it on a fake clock with fake agents."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
