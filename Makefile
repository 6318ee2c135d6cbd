# Each target sets itself up: a virtualenv in .venv with the requirements and the package.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# npm ci's: the book's front-end files, and playwright-core for the browser tests
NPM_STAMP := node_modules/.installed

.PHONY: .venv-clients demo labs test test-unit test-fast test-labs test-book book bench grade-demo grader-image cluster-image docker-cluster real-slurm clean

$(STAMP): requirements.txt pyproject.toml
	@echo "Setting up $(VENV): the pinned requirements (torch CPU, JupyterLab, otter-grader, ...) and minislurm;"
	@echo "once, about 1.7 GB: from 1.5 minutes with pip's cache to 5 minutes or more without."
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e . --config-settings editable_mode=compat
	touch $(STAMP)
	@echo "$(VENV) is ready."

# The tools ML people drive Slurm with (submitit, dask-jobqueue, parsl, snakemake, torchx,
# batchspawner: requirements-clients.txt),
# in a virtualenv of their own so that their pins never bend the project's; tests/clients runs
# them against live clusters.
CLIENTS       := .venv-clients
CLIENTS_STAMP := $(CLIENTS)/.installed
$(CLIENTS_STAMP): requirements-clients.txt
	$(PYTHON) -m venv $(CLIENTS)
	$(CLIENTS)/bin/python -m pip install -q --upgrade pip
	$(CLIENTS)/bin/python -m pip install -q -r requirements-clients.txt
	touch $(CLIENTS_STAMP)
.venv-clients: $(CLIENTS_STAMP)

demo: $(STAMP)
	$(VENV)/bin/minislurm demo

# The learner's path: the student notebooks (answers blanked, a check cell under each) in
# dist/student, and a Jupyter server on them; no Node.js, no book build.  Made once: run again,
# it keeps your work (delete dist/student for fresh copies).  JUPYTER_ARGS=--no-browser, ...
# As root (a container, a lab VM) Jupyter needs --allow-root, which is added for you.
LABS_DIR     ?= dist
JUPYTER_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)
labs: $(STAMP)
	@test -d $(LABS_DIR)/student || { \
	    echo "Making the student notebooks in $(LABS_DIR)/student (once, about a minute)"; \
	    $(VENV)/bin/minislurm grade assign --no-run-tests --jobs 2 --out $(LABS_DIR); }
	$(VENV)/bin/jupyter lab --notebook-dir=$(LABS_DIR)/student $(JUPYTER_ROOT) $(JUPYTER_ARGS)

# The README's test command: unit tests, every lab notebook, the book build and the browser test.
# Every part runs even when one before it fails, and a summary says how each went; the exit
# status is non-zero if any part failed.  TEST_PARTS=unit runs only that part.
TEST_PARTS ?= unit labs book
test: $(STAMP)
	@failed=""; summary=""; \
	for part in $(TEST_PARTS); do \
	    echo "== make test-$$part =="; start=$$(date +%s); \
	    if $(MAKE) --no-print-directory $(addprefix -f ,$(MAKEFILE_LIST)) test-$$part; \
	    then result=passed; else result=FAILED; failed="$$failed $$part"; fi; \
	    took=$$(( $$(date +%s) - start )); \
	    summary="$$summary$$(printf '  test-%-6s %s in %dm%02ds' $$part $$result $$((took / 60)) $$((took % 60)))\n"; \
	done; \
	printf '== make test: every part ran ==\n%b' "$$summary"; \
	if [ -n "$$failed" ]; then echo "make test: failed:$$failed"; exit 1; fi

# node_modules: the hub test (tests/docker/test_hub.py) logs a student in with headless Chromium
# through playwright-core, as the book's browser test does.  Five workers on two cores: the live,
# docker and grading tests spend about half their time waiting on daemons, containers and kernels
# (three workers left the CPUs 47% idle).
test-unit: $(STAMP) $(CLIENTS_STAMP) $(NPM_STAMP)
	$(PY) -m pytest -q --durations=25 -n 5 --no-loadscope-reorder --ignore=tests/book

# The edit-test loop: every test that starts no daemon, container or notebook kernel (those are
# marked `daemons`: tests/live, tests/docker, tests/grade and the book say so in their conftest or
# module, single tests by their decorator); the controller's rules run in-process on a fake clock
# (tests/ctld/ctldkit.py).  `make test` runs everything.
test-fast: $(STAMP)
	$(PY) -m pytest -q -x -m "not daemons"

# Every lab runs top to bottom with its worked answers (outputs are not compared), two at a time.
test-labs: $(STAMP)
	$(PY) -m pytest -q -n 2 --dist loadfile --nbval-lax --nbval-current-env labs/

# Headless Chromium opens the built pages offline (skipped without chromium unless
# MINISLURM_REQUIRE_BROWSER=1, as .ci/run sets); screenshots go to out/browser/.
test-book: book
	$(PY) -m pytest -q tests/book

# --- the book ---------------------------------------------------------------------------
# Front-end files come from npm at build time (exact versions in package.json and its lock) and
# are copied into the site, so pages render with no internet; none of them is committed.
NPM_DIST  := node_modules/@jupyter-widgets/html-manager/dist
VENDOR    := book/_vendor

$(NPM_STAMP): package.json package-lock.json
	@command -v npm >/dev/null || { echo "make book needs Node.js and npm (apt-get install nodejs npm)"; exit 1; }
	npm ci --no-audit --no-fund --loglevel=error
	touch $(NPM_STAMP)

# Every notebook page is executed on every build; a warning or a broken reference fails it.
# The widget manager's icon fonts go where its bundles look for them: next to the page, under
# the AMD module id that loaded first (@jupyter-widgets/ or @jupyter-widgets/html-manager/dist/).
book: $(STAMP) $(NPM_STAMP)
	rm -rf $(VENDOR) book/_vendor_root book/_build
	mkdir -p $(VENDOR)/widgets $(VENDOR)/mathjax
	cp node_modules/requirejs/require.js $(NPM_DIST)/embed-amd.js $(VENDOR)/widgets/
	cd node_modules/mathjax/es5 && cp -r tex-mml-chtml.js input output ui a11y sre adaptors ../../../$(VENDOR)/mathjax/
	for d in @jupyter-widgets @jupyter-widgets/html-manager/dist; do \
	    mkdir -p book/_vendor_root/$$d && \
	    cp $(NPM_DIST)/*.woff $(NPM_DIST)/*.woff2 $(NPM_DIST)/*.ttf $(NPM_DIST)/*.eot $(NPM_DIST)/*.svg book/_vendor_root/$$d/; \
	done
	$(VENV)/bin/jupyter-book build -W -n --keep-going --all book/

# Grading with otter-grader, end to end on lab 5: the student version and autograder zip, four
# example submissions (right, right on the public checks only, broken, corrupt), and grades.csv with
# the reports beside it; all in out/grade-demo.
GRADE_DEMO := out/grade-demo
grade-demo: $(STAMP)
	rm -rf $(GRADE_DEMO)
	$(VENV)/bin/minislurm grade assign labs/05-priority.ipynb --out $(GRADE_DEMO)/dist
	$(PY) examples/grading/make_submissions.py $(GRADE_DEMO)/dist/student/05-priority.ipynb $(GRADE_DEMO)/submissions
	$(VENV)/bin/minislurm grade run $(GRADE_DEMO)/submissions --autograder $(GRADE_DEMO)/dist/autograder/05-priority-autograder.zip \
	    --timeout 10 --out $(GRADE_DEMO)/grades.csv
	cat $(GRADE_DEMO)/grades.csv

# The image `minislurm grade run --docker auto|always` grades each submission in, from Debian
# packages and .venv's wheels, no registry needed (docker/grader/build.sh: root, a running Docker
# engine and debootstrap).  Once it exists, `grade run` uses it by default.
grader-image: $(STAMP)
	docker/grader/build.sh

# The image of minislurm's docker cluster (docker/minislurm/build.sh: the controller, node,
# login and hub roles in one image, built with no network from the debootstrapped base and .venv's
# wheels; root and a running Docker engine).  `minislurm cluster up --docker` builds it too
# when it is missing.
cluster-image: $(STAMP)
	docker/minislurm/build.sh

# minislurm's docker cluster, 4 nodes x 8 GPUs (the README's docker line): builds the image when
# missing, returns when every node is idle.  Then `.venv/bin/minislurm cluster shell`.
docker-cluster: $(STAMP)
	$(VENV)/bin/minislurm cluster up --docker

# The real-Slurm twin (docker/slurm): Debian's Slurm 22.05 in containers, a controller, nodes c1
# and c2 (4 fake GPUs each) and a login node.  Builds the image (cached when unchanged) and starts
# the twin if it is not running; tests/docker/test_real_slurm.py compares it with minislurm.
real-slurm: $(STAMP)
	docker/slurm/cluster.sh build -q >/dev/null
	docker/slurm/cluster.sh up
	@echo "The real-Slurm twin is up: docker/slurm/cluster.sh exec   (a shell on the login node as student,"
	@echo "in /shared/work; examples/ is in /shared/examples).  Stop it: docker/slurm/cluster.sh down"

bench: $(STAMP)
	$(PY) bench/sched_pass.py
	$(PY) bench/sim_replay.py

clean:
	rm -rf $(VENV) $(CLIENTS) out .pytest_cache node_modules book/_build $(VENDOR) book/_vendor_root
