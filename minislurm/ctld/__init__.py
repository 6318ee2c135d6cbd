"""The controller daemon (like slurmctld).

Its API checks requests with jsonschema: the one slow import jsonschema brings, which nothing here
uses, is skipped before any module of the controller imports it (:mod:`minislurm.core.lazyimports`).
"""

from minislurm.core.lazyimports import skip_slow_imports

skip_slow_imports()
