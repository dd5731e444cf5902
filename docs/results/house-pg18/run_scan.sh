#!/bin/bash
# Benchmark A driver: ROUNDS rounds, each round one throwaway cluster per
# variant (before/after), the variant that goes first alternating per round.
# The variant's pg_tempbuf.so is copied over the pkglibdir one while no
# cluster runs.
# env: PGC (pg_config), AB (dir with before.so/after.so), ROUNDS (7), ROWS (2000000), OUT (dir)
set -euo pipefail
PGC=${PGC:-/tmp/ab/pg18/bin/pg_config}
AB=${AB:-/tmp/ab}
ROUNDS=${ROUNDS:-7}
ROWS=${ROWS:-2000000}
OUT=${OUT:-$AB/scan}
HERE=$(cd "$(dirname "$0")" && pwd)
PGLAB=/work/main/.venv/bin/pglab
PY=/work/main/.venv/bin/python
LIBDIR=$($PGC --pkglibdir)
mkdir -p "$OUT"
CSV=$OUT/scan_raw.csv
for ((r = 0; r < ROUNDS; r++)); do
  if ((r % 2 == 0)); then order="before after"; else order="after before"; fi
  for v in $order; do
    if pgrep -x postgres >/dev/null && pgrep -a postgres | grep -q "$($PGC --bindir)"; then
      echo "a cluster of $PGC is running; refusing to switch" >&2; exit 1
    fi
    cp "$AB/$v.so" "$LIBDIR/pg_tempbuf.so"
    echo "== round $r variant $v so=$(md5sum < "$LIBDIR/pg_tempbuf.so" | cut -c1-12) $(date +%T)"
    explain=()
    if ((r == 0)); then explain=(--explain "$OUT/explain-$v.txt"); fi
    "$PGLAB" cluster-exec --pg-config "$PGC" --set shared_preload_libraries=pg_tempbuf -- \
      "$PY" "$HERE/scan_round.py" "$v" "$r" "$CSV" --rows "$ROWS" "${explain[@]}"
  done
done
echo "done $(date +%T)"
