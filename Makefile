# Each target sets itself up: a virtualenv in .venv with the requirements and the package.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test bench clean

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e . --config-settings editable_mode=compat
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/minislurm demo

test: $(STAMP)
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) bench/sched_pass.py
	$(PY) bench/sim_replay.py

clean:
	rm -rf $(VENV) out .pytest_cache
