# FedGen Lab. Two entry points for a fresh machine: `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.installed
FMNIST := /usr/share/datasets/fashion-mnist
IS_ROOT := $(shell [ "$$(id -u)" = 0 ] && echo yes)
HAS_APT := $(shell command -v apt-get >/dev/null 2>&1 && echo yes)

# Python compiles our ~500 modules (and pytest rewrites the tests' asserts) on every start when
# PYTHONDONTWRITEBYTECODE is set, as it is on this project's machines: about 8 s of each pytest
# process's 16 s start, paid by make check's three processes and by every lab, API and worker
# process the tests start. The bytecode goes to __pycache__/, which git ignores.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo test check install data services browser lint bench clean contract

$(PY):
	$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else "Python 3.11 is required (set PYTHON=...)")'
	$(PYTHON) -m venv $(VENV)

# torch and torchvision come from this machine's local wheels through pip. The .pth puts the
# repository root on sys.path (bench/, scripts/, tests/ import as packages), which setuptools'
# deprecated `editable_mode=compat` did, without its deprecation warning.
$(STAMP): pyproject.toml | $(PY)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.14.1 torchvision==0.29.1
	$(PIP) install -q -e '.[service,dashboard,dev]'
	$(PY) -c 'import pathlib, sysconfig; pathlib.Path(sysconfig.get_paths()["purelib"], "fedgen-lab-root.pth").write_text("$(CURDIR)\n")'
	touch $(STAMP)

install: $(STAMP)

# Debian's dataset-fashion-mnist, where apt-get exists and we are root.
data:
	@if [ ! -d $(FMNIST) ]; then \
	  if [ "$(HAS_APT)" = yes ] && [ "$(IS_ROOT)" = yes ]; then \
	    apt-get install -y -q dataset-fashion-mnist >/dev/null || (apt-get update -q >/dev/null && apt-get install -y -q dataset-fashion-mnist >/dev/null); \
	  else echo "note: Fashion-MNIST not found in $(FMNIST); install Debian's dataset-fashion-mnist or set data.root"; fi; \
	fi

# Debian's Chromium for the browser test (never a downloaded browser).
browser:
	@if [ ! -x /usr/bin/chromium ] && [ "$(HAS_APT)" = yes ] && [ "$(IS_ROOT)" = yes ]; then \
	  apt-get install -y -q chromium >/dev/null || (apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null); \
	fi

# PostgreSQL and Redis for the tests marked `postgres`.
services:
	@pg_isready -q -h 127.0.0.1 -p 5432 || pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql) main start
	@redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 || redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save ""
	@for i in $$(seq 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done

# Both cores (CI has 2), a test file per worker: a file's tests run in order, as they were
# written (some share a module-scoped lab and build on each other's rounds).
test: install data services browser lint
	$(VENV)/bin/pytest -q -n 2 --dist loadfile --no-loadscope-reorder

# The fast loop: lint, then the tests that need no browser, no Postgres, no lab or worker
# processes and no real training (those are marked browser, postgres or slow).
CHECK_MARKERS := not slow and not browser and not postgres
check: lint
	$(VENV)/bin/pytest -q -n 2 -m "$(CHECK_MARKERS)"

demo: install data
	@$(PY) -m scripts.demo

# mypy checks with a worker process per core: a first run (no .mypy_cache/ yet) took 65 s
# alone and 36 s on both cores of a 2-core VM; a run with its cache, about 1 s either way.
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy --num-workers auto fedgen vocab fedgen_lab lab api worker dashboard admin

# Schemathesis, every check, against a live `fedgen-lab api` on a scratch Postgres schema;
# non-zero on any failure, under 1000 generated cases (CONTRACT_EXAMPLES per operation/phase)
# or past CONTRACT_TIMEOUT_S (stopped, exit 124); output as it comes, clean-up on every exit.
CONTRACT_EXAMPLES ?= 30
CONTRACT_TIMEOUT_S ?= 1800
contract: install services
	$(PY) -m scripts.contract --max-examples $(CONTRACT_EXAMPLES) --min-cases 1000 --timeout-s $(CONTRACT_TIMEOUT_S)

bench: install data
	$(PY) bench/round_speed.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
