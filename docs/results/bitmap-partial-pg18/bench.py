"""Issue 30's partial Temp Bitmap Heap Scan: an OR of two indexed columns on a 1M-row temporary
table (flushed, resident, temp_buffers 512MB) read through a bitmap (index scans off), timed as
pg_tempbuf chooses (on), as stock (off), and over an UNLOGGED copy under stock parallel query; and
the partial form forced (parallel costs 0) against off.  Medians of 7 interleaved runs, ms.
Run: pglab cluster-exec --set shared_preload_libraries=pg_tempbuf -- python bench.py"""

import json
import statistics
import sys
import time

import psycopg

QUERIES = {"narrow": "SELECT count(*), sum(id) FROM {t} WHERE a < 150 OR b < 150",
           "wide": "SELECT count(*), sum(id) FROM {t} WHERE a < 3000 OR b < 3000"}
CONFIGS = {
    "off": ("bm", ["SET pg_tempbuf.parallel_scan = off"]),
    "on": ("bm", ["SET pg_tempbuf.parallel_scan = on"]),
    "on_forced_partial": ("bm", ["SET pg_tempbuf.parallel_scan = on", "SET parallel_setup_cost = 0",
                                 "SET parallel_tuple_cost = 0", "SET pg_tempbuf.parallel_margin = 0",
                                 "SET pg_tempbuf.read_page_cost = 0", "SET enable_seqscan = off"]),
    "unlogged": ("bm_u", ["SET pg_tempbuf.parallel_scan = on"]),
}
RESET = ["RESET parallel_setup_cost", "RESET parallel_tuple_cost", "RESET pg_tempbuf.parallel_margin",
         "RESET pg_tempbuf.read_page_cost", "RESET enable_seqscan"]

with psycopg.connect(autocommit=True, prepare_threshold=None) as conn:
    conn.execute("SET temp_buffers = '512MB'")
    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_tempbuf")
    conn.execute("CREATE TEMP TABLE bm AS SELECT g AS id, (g::bigint * 7919) % 100000 AS a, "
                 "(g::bigint * 104729) % 100000 AS b, md5(g::text) AS s FROM generate_series(1, 1000000) g")
    conn.execute("CREATE UNLOGGED TABLE bm_u AS SELECT * FROM bm")
    for t in ("bm", "bm_u"):
        conn.execute(f"CREATE INDEX ON {t} (a)")
        conn.execute(f"CREATE INDEX ON {t} (b)")
        conn.execute(f"VACUUM ANALYZE {t}")
    conn.execute("SELECT pg_flush_local_buffers()")
    conn.execute("SET enable_indexscan = off")
    plans: dict[str, str] = {}
    times: dict[str, list[float]] = {f"{q}/{c}": [] for q in QUERIES for c in CONFIGS}
    answers: dict[str, set[str]] = {q: set() for q in QUERIES}
    for rnd in range(8):
        order = list(CONFIGS) if rnd % 2 == 0 else list(reversed(CONFIGS))
        for q, sql in QUERIES.items():
            for c in order:
                table, sets = CONFIGS[c]
                for s in sets:
                    conn.execute(s)
                text = sql.format(t=table)
                if rnd == 0:
                    plan = conn.execute(f"EXPLAIN (COSTS OFF) {text}").fetchall()
                    plans[f"{q}/{c}"] = "\n".join(r[0] for r in plan)
                start = time.perf_counter()
                row = conn.execute(text).fetchone()
                elapsed = (time.perf_counter() - start) * 1000
                answers[q].add(str(row))
                if rnd > 0:  # the first round warms the caches
                    times[f"{q}/{c}"].append(elapsed)
                for s in RESET:
                    conn.execute(s)
    result = {"medians_ms": {k: statistics.median(v) for k, v in times.items()},
              "runs_ms": times, "plans": plans, "answers": {q: sorted(a) for q, a in answers.items()},
              "server": conn.execute("SELECT version()").fetchone()[0]}
    json.dump(result, sys.stdout, indent=1)
