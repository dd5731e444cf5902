#!/bin/bash
# Issue 29 before/after on PostgreSQL 18: A (scan), then B (pglab overhead),
# then C (pglab regret), then summary.md.
# Prerequisites (see README.md here): $AB/pg18 (copy of the embedded PostgreSQL 18
# install, pg_tempbuf .control/.sql installed), $AB/before.so and $AB/after.so
# built with PG_CONFIG=$AB/pg18/bin/pg_config from worktrees of the two commits.
# env: AB (/tmp/ab), RES (results dir), BEFORE, AFTER (commit ids, for the record),
#      SKIP (space-separated parts to skip: A B C), REGRET_SCALE (empty = 0.5 default)
set -euo pipefail
AB=${AB:-/tmp/ab}
PGC=${PGC:-/tmp/ab/pg18/bin/pg_config}
RES=${RES:-$AB/res}
HERE=$(cd "$(dirname "$0")" && pwd)
PGLAB=/work/main/.venv/bin/pglab
PY=/work/main/.venv/bin/python
LIBDIR=$($PGC --pkglibdir)
SKIP=${SKIP:-}
mkdir -p "$RES"

use() {  # copy a variant's library in place; no cluster of $PGC may run
  if pgrep -a postgres | grep -q "$($PGC --bindir)"; then
    echo "a cluster of $PGC is running; refusing to switch" >&2; exit 1
  fi
  cp "$AB/$1.so" "$LIBDIR/pg_tempbuf.so"
  echo "== $2 variant $1 so=$(md5sum < "$LIBDIR/pg_tempbuf.so" | cut -c1-12) $(date +%T)"
}

date -u +%FT%TZ > "$RES/started"

if [[ " $SKIP " != *" A "* ]]; then
  AB=$AB OUT=$RES/scan ROUNDS=${ROUNDS:-7} "$HERE/run_scan.sh"
  cp "$RES/scan/scan_raw.csv" "$RES/scan_raw.csv"
  for v in before after; do cp "$RES/scan/explain-$v.txt" "$RES/scan-explain-$v.txt"; done
fi

if [[ " $SKIP " != *" B "* ]]; then
  for v in before after; do
    use $v B
    rm -rf "$AB/ov-$v"
    "$PGLAB" overhead --no-tps --scale 1 --queries 200 --warmup-queries 20 --count-rounds 1 \
      --point-temp-buffers 512MB --plannings 60 --counted-plannings 10 --tpch-scale 0.5 \
      --tpch-plannings 7 --pg-config "$PGC" --out "$AB/ov-$v" > "$RES/overhead-$v.log" 2>&1
    cp "$AB/ov-$v/results.json" "$RES/overhead-$v.results.json"
    cp "$AB/ov-$v/summary.md" "$RES/overhead-$v.summary.md"
  done
fi

if [[ " $SKIP " != *" C "* ]]; then
  scale=()
  if [[ -n "${REGRET_SCALE:-}" ]]; then scale=(--scale "$REGRET_SCALE"); fi
  for v in ${REGRET_ORDER:-after before}; do
    use $v C
    rm -rf "$AB/regret-$v"
    "$PGLAB" regret --no-sessions --no-shapes --loads 1 --repetitions 3 "${scale[@]}" \
      --pg-config "$PGC" --out "$AB/regret-$v" > "$RES/regret-$v.log" 2>&1 || echo "regret $v exit $?"
    cp "$AB/regret-$v/results.json" "$RES/regret-$v.results.json"
    cp "$AB/regret-$v/summary.md" "$RES/regret-$v.summary.md"
    echo "   regret $v done $(date +%T)"
  done
fi

date -u +%FT%TZ > "$RES/finished"
echo "all done $(date +%T)"
