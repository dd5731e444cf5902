#!/usr/bin/env python3
"""One round of benchmark A (fresh-table and resident 2M-row temp scan) on the
throwaway cluster that `pglab cluster-exec` started (PGHOST/PGPORT/... in env).

Usage: scan_round.py VARIANT ROUND OUT_CSV [--explain OUT_TXT] [--rows N]

Two sessions, each on its own fresh temp table t (2M rows, md5 text):
  mode on : pg_tempbuf.parallel_scan = on  (the default)
  mode off: pg_tempbuf.parallel_scan = off
In each: time (client side, ms) the first query (fresh table, dirty pages),
then the same query 3 more times (resident).  The order of the two modes
alternates with the round number.  Appends one CSV row per query.
With --explain, also writes EXPLAIN (ANALYZE, COSTS OFF) of the query in both
modes (after the timed queries) and checks the plan shape / worker launch.
"""
import csv
import os
import sys
import time

import psycopg

QUERY = "SELECT count(*), max(s) FROM t WHERE s LIKE '%ab%'"
RESIDENT_REPEATS = 3


def run_mode(mode, rows, explain_lines):
    with psycopg.connect(autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("SET temp_buffers = '512MB'")
        cur.execute("SET max_parallel_workers_per_gather = 2")
        cur.execute("SET pg_tempbuf.parallel_scan = %s" % ("on" if mode == "on" else "off"))
        t0 = time.perf_counter()
        cur.execute(
            "CREATE TEMP TABLE t AS SELECT g AS k, md5(g::text) AS s "
            "FROM generate_series(1, %d) g" % rows)
        cur.execute("ANALYZE t")
        create_ms = (time.perf_counter() - t0) * 1000.0
        out = []
        results = set()
        for i in range(1 + RESIDENT_REPEATS):
            t0 = time.perf_counter()
            cur.execute(QUERY)
            res = cur.fetchone()
            ms = (time.perf_counter() - t0) * 1000.0
            results.add(tuple(res))
            out.append(("first" if i == 0 else "resident", i, ms, res))
        if explain_lines is not None:
            cur.execute("EXPLAIN (ANALYZE, COSTS OFF) " + QUERY)
            plan = [r[0] for r in cur.fetchall()]
            explain_lines.append("-- mode %s (pg_tempbuf.parallel_scan = %s)" % (mode, mode))
            explain_lines.extend(plan)
            explain_lines.append("")
            text = "\n".join(plan)
            if mode == "on":
                ok = ("Gather" in text and "Parallel Custom Scan (Temp Seq Scan)" in text
                      and "Workers Launched: 2" in text)
                explain_lines.append("-- check on: Gather over Parallel Custom Scan (Temp Seq Scan), "
                                     "2 workers launched: %s" % ("OK" if ok else "FAILED"))
                explain_lines.append("")
                if not ok:
                    print("PLAN CHECK FAILED (on):\n" + text, file=sys.stderr)
        cur.execute("SHOW pg_tempbuf.parallel_scan")
        shown = cur.fetchone()[0]
        assert shown == mode, (shown, mode)
        assert len(results) == 1, results
        return create_ms, out, results.pop()


def main():
    variant, rnd, out_csv = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    explain_out = None
    rows = 2000000
    args = sys.argv[4:]
    while args:
        a = args.pop(0)
        if a == "--explain":
            explain_out = args.pop(0)
        elif a == "--rows":
            rows = int(args.pop(0))
        else:
            raise SystemExit("unknown arg " + a)
    with psycopg.connect(autocommit=True) as conn:
        server_version = conn.execute("SHOW server_version").fetchone()[0]
        spl = conn.execute("SHOW shared_preload_libraries").fetchone()[0]
        lib = conn.execute("SELECT setting FROM pg_settings WHERE name = 'dynamic_library_path'").fetchone()[0]
    assert "pg_tempbuf" in spl, spl
    modes = ["on", "off"] if rnd % 2 == 0 else ["off", "on"]
    explain_lines = [] if explain_out else None
    rows_out = []
    answers = {}
    for order, mode in enumerate(modes):
        create_ms, out, answer = run_mode(mode, rows, explain_lines)
        answers[mode] = answer
        for kind, i, ms, res in out:
            rows_out.append(dict(variant=variant, round=rnd, mode=mode, mode_order=order,
                                 query=kind, query_index=i, ms="%.3f" % ms,
                                 create_analyze_ms="%.1f" % create_ms,
                                 count=res[0], max_s=res[1], server_version=server_version))
    if answers["on"] != answers["off"]:
        print("RESULT MISMATCH on/off: %r vs %r" % (answers["on"], answers["off"]), file=sys.stderr)
        sys.exit(3)
    new = not os.path.exists(out_csv)
    with open(out_csv, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows_out[0].keys()))
        if new:
            w.writeheader()
        w.writerows(rows_out)
    if explain_out:
        explain_lines.append("-- answers on=%r off=%r (match)" % (answers["on"], answers["off"]))
        with open(explain_out, "w") as f:
            f.write("\n".join(explain_lines) + "\n")
    for r in rows_out:
        print(r["variant"], r["round"], r["mode"], r["query"], r["query_index"], r["ms"])


if __name__ == "__main__":
    main()
