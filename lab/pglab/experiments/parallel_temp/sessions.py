"""Real sessions in the decision experiment: tables as users write them, timed as users query them.

The decision grid of `runner.py` runs with the benchmark's small `temp_buffers`, so its tables
never have more dirty pages than that pool holds.  A real session with a large `temp_buffers`
writes a table (CTAS, or several INSERTs) and queries it at once: every page is dirty, and the
first query pays for them.  Each case below is built in such a session, for every table size:

* `fresh_ctas`: CREATE TEMP TABLE AS, then the query (no ANALYZE: a user's session rarely runs one);
* `steps`: CREATE TEMP TABLE, four INSERT ... SELECT statements, ANALYZE, then the query;
* `no_copies`: as `fresh_ctas`, with `pg_tempbuf.shared_pool = off`: what a system that
  forbids one process to read another's memory gets (Yama's ptrace_scope above 1, a seccomp
  filter, another OS), where the leader writes the dirty pages workers read.  Skipped, and said
  so, when the server does not know that setting.

For each case, query and repetition, three configurations run, interleaved (the order rotates
with the repetition), each on a table rebuilt just before it: `off` (`pg_tempbuf.parallel_scan
= off`, the stock plan), `chosen` (on, default costs: the planner's choice, read from EXPLAIN
before the timed run) and `forced` (on, a parallel plan forced as `FORCE_PARALLEL` does).  Each
times the first query on the new table, then the same query again (the second query: after a
parallel first query the pages are clean, after a serial one they stay dirty).  All
three must return the same rows.

Each timed query's plan is recorded (a digest of EXPLAIN (COSTS OFF)).  `chosen` runs the plan
of `off` or the plan of `forced`, so its runs join that plan's samples: each plan's median is
taken over every run of that plan.  Per case and per first/second query: the plans' medians,
whether the planner chose the faster plan, the regret median(chosen plan) / median(faster plan) - 1,
and the speedup of `chosen` over `off` (chosen's own runs).  Chosen's own runs against the
configuration that ran the same plan stay in the output as a gauge of noise.
"""

from __future__ import annotations

import hashlib
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from pglab import report_section as rs
from pglab.errors import LabError
from pglab.experiments.parallel_temp.options import ParallelTempOptions
from pglab.experiments.parallel_temp.workload import DEFAULT_COSTS, FORCE_PARALLEL, QUERIES
from pglab.server import TargetServer
from pglab.stats import differ_p, smallest_differ_p

EXTENSION = "pg_tempbuf"
TABLE = "session_t"

INSERT_STEPS = 4  # the `steps` case: CREATE, then this many INSERT ... SELECT
COPY_GUC = "pg_tempbuf.shared_pool"

SESSION_QUERIES = ("cpu_aggregate", "count")
CONFIGS = ("off", "chosen", "forced")
CASES = {
    "fresh_ctas": "CREATE TEMP TABLE AS, queried at once (every page dirty)",
    "steps": f"CREATE TEMP TABLE, {INSERT_STEPS} INSERT ... SELECT, ANALYZE, then queried",
    "no_copies": f"as fresh_ctas, {COPY_GUC} = off: the leader writes the dirty pages workers read",
}
# Settings a case runs under, in every configuration (the stock plan ignores them).
CASE_SETTINGS = {"no_copies": ((COPY_GUC, "off"),)}
QUERY_ORDINALS = ("first", "second")

# The acceptance line: 2M rows by CTAS, the LIKE aggregate, first query.
ACCEPTANCE_ROWS = 2_000_000
ACCEPTANCE_CASE = "fresh_ctas"
ACCEPTANCE_QUERY = "cpu_aggregate"
ACCEPTANCE_SPEEDUP = 1.3
TIE_P = 0.05  # a miss whose plans' runs differ with p at or above this is within noise
QUICK_SESSION_REPETITIONS = 2


# -- what a run records ---------------------------------------------------------------


@dataclass
class SessionRun:
    """One configuration on one freshly built table: the first query, then the second."""
    config: str
    repetition: int
    pages: int
    dirty_before_first: int  # pg_dirtied_local_buffers() just before each timed query
    dirty_before_second: int
    plan_first: str  # "parallel" (Gather above our Temp Seq Scan) or "serial", from EXPLAIN
    plan_second: str
    first_ms: float
    second_ms: float
    digest_first: str  # of the rows returned
    digest_second: str
    plan_digest_first: str  # of EXPLAIN (COSTS OFF): which plan ran
    plan_digest_second: str


@dataclass
class SessionCase:
    """One case (how the table was written) x table size x query, with all its runs."""
    case: str
    rows: int
    query: str
    skipped: str | None = None  # why it did not run; None when it ran
    runs: list[SessionRun] = field(default_factory=list)


@dataclass
class SessionResults:
    temp_buffers: str
    repetitions: int
    rows: tuple[int, ...]
    copy_guc_known: bool
    workers_per_gather: int
    cases: list[SessionCase] = field(default_factory=list)


def session_rows(options: ParallelTempOptions) -> tuple[int, ...]:
    return (min(options.rows),) if options.quick else options.rows


def session_repetitions(options: ParallelTempOptions) -> int:
    return min(options.repetitions, QUICK_SESSION_REPETITIONS) if options.quick else options.repetitions


def session_steps(options: ParallelTempOptions) -> int:
    """Progress-bar units: one per configuration run (first and second query)."""
    return len(session_rows(options)) * len(CASES) * len(SESSION_QUERIES) * session_repetitions(options) * len(CONFIGS)


# -- running --------------------------------------------------------------------------


def open_session(target: TargetServer, temp_buffers: str) -> psycopg.Connection[Any]:
    """A user's session: temp_buffers set at connection (it cannot change after the first
    temporary-table access), the library loaded, jit off as in the rest of the experiment."""
    conn = target.connect(options=f"-c temp_buffers={temp_buffers}")
    conn.execute("SET jit = off")
    conn.execute("SET client_min_messages = warning")
    conn.execute(f"CREATE EXTENSION IF NOT EXISTS {EXTENSION}")
    conn.execute(f"LOAD '{EXTENSION}'")
    return conn


def scalar(conn: psycopg.Connection[Any], sql: str, params: tuple[Any, ...] = ()) -> Any:
    row = conn.execute(sql, params).fetchone()
    return None if row is None else row[0]


def guc_known(conn: psycopg.Connection[Any], name: str) -> bool:
    return scalar(conn, "SELECT 1 FROM pg_settings WHERE name = %s", (name,)) is not None


def build_table(conn: psycopg.Connection[Any], case: str, rows: int) -> int:
    """Write the table as the case says, untimed; returns its pages.  The same rows as the
    benchmark's table (x int, s text = md5(x)) whatever the case."""
    rows = int(rows)
    conn.execute(f"DROP TABLE IF EXISTS {TABLE}")  # drops its local buffers, dirty or not, unwritten
    if case == "steps":
        conn.execute(f"CREATE TEMP TABLE {TABLE} (x int, s text)")
        bounds = [rows * i // INSERT_STEPS for i in range(INSERT_STEPS + 1)]
        for low, high in zip(bounds, bounds[1:], strict=False):
            if high > low:
                conn.execute(f"INSERT INTO {TABLE} SELECT g, md5(g::text) "
                             f"FROM generate_series({low + 1}, {high}) g")
        conn.execute(f"ANALYZE {TABLE}")
    else:
        conn.execute(f"CREATE TEMP TABLE {TABLE} AS "
                     f"SELECT g AS x, md5(g::text) AS s FROM generate_series(1, {rows}) g")
    return int(scalar(conn, f"SELECT pg_relation_size('{TABLE}') / current_setting('block_size')::int"))


def configure(conn: psycopg.Connection[Any], config: str) -> None:
    conn.execute("SET pg_tempbuf.parallel_scan = " + ("off" if config == "off" else "on"))
    for statement in FORCE_PARALLEL if config == "forced" else DEFAULT_COSTS:
        conn.execute(statement)
    conn.execute("RESET max_parallel_workers_per_gather")  # default workers: a user's session


def plan_kind(conn: psycopg.Connection[Any], sql: str) -> tuple[str, str]:
    """('parallel' when the plan has our Temp Seq Scan under a Gather, else 'serial'; a digest of
    the plan's EXPLAIN (COSTS OFF) text, which tells two plans apart)."""
    lines = [str(r[0]) for r in conn.execute(f"EXPLAIN (COSTS OFF) {sql}").fetchall()]
    gather = any("Gather" in line for line in lines)
    ours = any("Temp Seq Scan" in line for line in lines)
    digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]
    return ("parallel" if gather and ours else "serial"), digest


def timed(conn: psycopg.Connection[Any], sql: str) -> tuple[float, str]:
    start = time.perf_counter()
    rows = conn.execute(sql).fetchall()
    ms = (time.perf_counter() - start) * 1000.0
    return ms, hashlib.sha256(repr(sorted(rows, key=repr)).encode()).hexdigest()


def dirtied(conn: psycopg.Connection[Any]) -> int:
    return int(scalar(conn, "SELECT pg_dirtied_local_buffers()"))


def run_one(conn: psycopg.Connection[Any], case: SessionCase, config: str, repetition: int) -> SessionRun:
    sql = QUERIES[case.query].format(t=TABLE)
    pages = build_table(conn, case.case, case.rows)
    configure(conn, config)
    for name, value in CASE_SETTINGS.get(case.case, ()):
        conn.execute(f"SET {name} = {value}")
    dirty_first = dirtied(conn)
    plan_first, plan_digest_first = plan_kind(conn, sql)
    first_ms, digest_first = timed(conn, sql)
    dirty_second = dirtied(conn)
    plan_second, plan_digest_second = plan_kind(conn, sql)
    second_ms, digest_second = timed(conn, sql)
    for name, _ in CASE_SETTINGS.get(case.case, ()):
        conn.execute(f"RESET {name}")
    return SessionRun(config, repetition, pages, dirty_first, dirty_second, plan_first, plan_second,
                      first_ms, second_ms, digest_first, digest_second, plan_digest_first, plan_digest_second)


def check_same_rows(case: SessionCase) -> None:
    digests = {(r.config, which): d for r in case.runs
               for which, d in (("first", r.digest_first), ("second", r.digest_second))}
    if len(set(digests.values())) > 1:
        by_config = ", ".join(f"{config} {which}: {d[:12]}" for (config, which), d in sorted(digests.items()))
        raise LabError(f"real-session case {case.case}, {case.rows:,} rows, {case.query}: the configurations "
                       f"returned different rows ({by_config}): this is a bug, please report it")


def run_sessions(target: TargetServer, options: ParallelTempOptions, progress: Progress) -> SessionResults:
    """Every case x size x query, configurations interleaved, each on a rebuilt table."""
    repetitions = session_repetitions(options)
    task = progress.add_task("real sessions", total=session_steps(options))
    results: SessionResults | None = None
    for rows in session_rows(options):
        with open_session(target, options.session_temp_buffers) as conn:
            if results is None:
                results = SessionResults(
                    temp_buffers=options.session_temp_buffers, repetitions=repetitions,
                    rows=session_rows(options), copy_guc_known=guc_known(conn, COPY_GUC),
                    workers_per_gather=int(scalar(conn, "SELECT current_setting('max_parallel_workers_per_gather')")))
                if not results.copy_guc_known:
                    progress.console.print(f"[yellow]real sessions: no_copies SKIPPED: the server has no "
                                           f"setting {COPY_GUC}[/yellow]")
            for case_name in CASES:
                skipped = (f"the server has no setting {COPY_GUC}"
                           if case_name in CASE_SETTINGS and not results.copy_guc_known else None)
                for query in SESSION_QUERIES:
                    case = SessionCase(case_name, rows, query, skipped=skipped)
                    results.cases.append(case)
                    if skipped:
                        progress.advance(task, repetitions * len(CONFIGS))
                        continue
                    progress.update(task, description=f"real sessions: {case_name}, {rows:,} rows, {query}")
                    for repetition in range(repetitions):
                        # Interleaved, the order rotating, so that drifting load hits all three alike.
                        shift = repetition % len(CONFIGS)
                        for config in CONFIGS[shift:] + CONFIGS[:shift]:
                            case.runs.append(run_one(conn, case, config, repetition))
                            progress.advance(task)
                    check_same_rows(case)
            conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
    assert results is not None
    return results


# -- analysis -------------------------------------------------------------------------


def planner_choice(plans: list[str]) -> str:
    kinds = set(plans)
    return kinds.pop() if len(kinds) == 1 else "mixed"


def plan_samples(runs: list[SessionRun], which: str) -> dict[str, list[float]]:
    """Times of the `which` query by the plan that ran it (EXPLAIN digest), every configuration
    pooled: `chosen` runs the same plan as `off` or as `forced`."""
    out: dict[str, list[float]] = {}
    for r in runs:
        out.setdefault(getattr(r, f"plan_digest_{which}"), []).append(getattr(r, f"{which}_ms"))
    return out


def case_rows(results: SessionResults) -> list[dict[str, Any]]:
    """One row per case x size x query x first/second query (skipped cases included, marked)."""
    out: list[dict[str, Any]] = []
    for case in results.cases:
        for which in QUERY_ORDINALS:
            row: dict[str, Any] = {"case": case.case, "rows": case.rows, "query": case.query, "which": which,
                                   "status": "skipped" if case.skipped else "ok", "skipped_reason": case.skipped or ""}
            if case.skipped or not case.runs:
                out.append(row)
                continue
            by_config = {c: [r for r in case.runs if r.config == c] for c in CONFIGS}
            own = {c: statistics.median(getattr(r, f"{which}_ms") for r in runs) for c, runs in by_config.items()}
            plans = {c: [getattr(r, f"plan_{which}") for r in runs] for c, runs in by_config.items()}
            digests = {c: statistics.mode(getattr(r, f"plan_digest_{which}") for r in runs)
                       for c, runs in by_config.items()}
            samples = plan_samples(case.runs, which)
            serial_runs, parallel_runs = samples[digests["off"]], samples[digests["forced"]]
            serial_ms = statistics.median(serial_runs)
            parallel_ms = statistics.median(parallel_runs)
            chosen_ms = statistics.median(samples[digests["chosen"]])
            dirty = [getattr(r, f"dirty_before_{which}") for r in by_config["chosen"]]
            faster = "parallel" if parallel_ms < serial_ms else "serial"
            planner = planner_choice(plans["chosen"])
            best = min(serial_ms, parallel_ms)
            same_as = ("off" if digests["chosen"] == digests["off"]
                       else "forced" if digests["chosen"] == digests["forced"] else None)
            row.update({
                "pages": case.runs[0].pages,
                "dirty_pages": statistics.median(dirty),
                "off_ms": own["off"], "chosen_ms": own["chosen"], "forced_ms": own["forced"],
                "serial_plan_ms": serial_ms, "parallel_plan_ms": parallel_ms, "chosen_plan_ms": chosen_ms,
                "serial_plan_runs": len(serial_runs), "parallel_plan_runs": len(parallel_runs),
                "chosen_plan": same_as or "other",
                "faster": faster, "planner": planner,
                "planner_parallel_runs": plans["chosen"].count("parallel"), "runs": len(plans["chosen"]),
                "faster_chosen": planner == faster and same_as is not None,
                "margin_pct": 100.0 * (max(serial_ms, parallel_ms) / best - 1) if best else 0.0,
                # can the runs tell the two plans apart at all?  A gauge, not a change to "faster";
                # None where too few runs could never show a difference
                "plans_differ_p": (differ_p(serial_runs, parallel_runs)
                                   if smallest_differ_p(len(serial_runs), len(parallel_runs)) < TIE_P else None),
                "regret_pct": 100.0 * (chosen_ms / best - 1) if best else 0.0,
                # chosen's own runs against the best configuration's own runs, as before plans were pooled
                "own_regret_pct": 100.0 * (own["chosen"] / min(own["off"], own["forced"]) - 1),
                # chosen against the configuration that ran the same plan: the noise of this case
                "same_plan_diff_pct": 100.0 * (own["chosen"] / own[same_as] - 1) if same_as else None,
                "speedup_chosen_vs_off": own["off"] / own["chosen"] if own["chosen"] else 0.0,
                "forced_parallel": all(p == "parallel" for p in plans["forced"]),
                "off_serial": all(p == "serial" for p in plans["off"]),
                "same_rows": True,  # check_same_rows() stopped the run otherwise
            })
            out.append(row)
    return out


def totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Over the case rows that ran (case x size x query x first/second query)."""
    ran = [r for r in rows if r["status"] == "ok"]
    skipped = {(r["case"], r["rows"], r["query"]) for r in rows if r["status"] == "skipped"}
    out: dict[str, Any] = {"cases": len(ran), "skipped": len(skipped),
                           "skipped_reasons": sorted({r["skipped_reason"] for r in rows if r["status"] == "skipped"})}
    if not ran:
        return out
    worst = max(ran, key=lambda r: r["regret_pct"])
    by_plan = [r for r in ran if r["same_plan_diff_pct"] is not None]
    out.update({
        "faster_chosen": sum(1 for r in ran if r["faster_chosen"]),
        "faster_chosen_share": sum(1 for r in ran if r["faster_chosen"]) / len(ran),
        "worst_regret_pct": worst["regret_pct"],
        "worst_regret_case": f"{worst['case']}, {worst['rows']:,} rows, {worst['query']}, {worst['which']} query",
        "regret_over_10pct": sum(1 for r in ran if r["regret_pct"] > 10.0),
        "misses": sum(1 for r in ran if not r["faster_chosen"]),
        "misses_tied": sum(1 for r in ran if not r["faster_chosen"] and r["plans_differ_p"] is not None
                           and r["plans_differ_p"] >= TIE_P),
        "misses_untested": sum(1 for r in ran if not r["faster_chosen"] and r["plans_differ_p"] is None),
        "worst_own_regret_pct": max(r["own_regret_pct"] for r in ran),
        "largest_same_plan_diff_pct": max((abs(r["same_plan_diff_pct"]) for r in by_plan), default=None),
        "mixed_choices": sum(1 for r in ran if r["planner"] == "mixed"),
        **{f"faster_chosen_{which}": sum(1 for r in ran if r["which"] == which and r["faster_chosen"])
           for which in QUERY_ORDINALS},
        **{f"cases_{which}": sum(1 for r in ran if r["which"] == which) for which in QUERY_ORDINALS},
        "forced_not_parallel": sum(1 for r in ran if not r["forced_parallel"]),
    })
    return out


def acceptance(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The issue's line: 2M rows by CTAS, LIKE aggregate, first query: plan, speedup, rows."""
    match = [r for r in rows if (r["case"], r["rows"], r["query"], r["which"])
             == (ACCEPTANCE_CASE, ACCEPTANCE_ROWS, ACCEPTANCE_QUERY, "first") and r["status"] == "ok"]
    if not match:
        return {"measured": False, "rows": ACCEPTANCE_ROWS}
    [r] = match
    met = r["planner"] == "parallel" and r["speedup_chosen_vs_off"] >= ACCEPTANCE_SPEEDUP and r["same_rows"]
    return {"measured": True, "rows": ACCEPTANCE_ROWS, "planner": r["planner"],
            "planner_parallel_runs": r["planner_parallel_runs"], "runs": r["runs"],
            "off_ms": r["off_ms"], "chosen_ms": r["chosen_ms"], "speedup": r["speedup_chosen_vs_off"],
            "same_rows": r["same_rows"], "required_speedup": ACCEPTANCE_SPEEDUP, "met": met}


def raw_rows(results: SessionResults) -> list[dict[str, Any]]:
    return [{"case": c.case, "rows": c.rows, "query": c.query, **asdict(r)}
            for c in results.cases for r in c.runs]


def as_json(results: SessionResults) -> dict[str, Any]:
    rows = case_rows(results)
    return {"temp_buffers": results.temp_buffers, "repetitions": results.repetitions, "rows": list(results.rows),
            "workers_per_gather": results.workers_per_gather, "copy_guc_known": results.copy_guc_known,
            "cases": rows, "totals": totals(rows),
            "acceptance": acceptance(rows), "runs": raw_rows(results)}


# -- outputs --------------------------------------------------------------------------


def fmt_pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}%"


def fmt_p(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def acceptance_sentence(a: dict[str, Any]) -> str:
    if not a["measured"]:
        return (f"Acceptance line ({a['rows']:,}-row {ACCEPTANCE_CASE}, {ACCEPTANCE_QUERY}, first query): "
                "not measured in this run (that size is not in --rows).")
    return (f"Acceptance line ({a['rows']:,}-row {ACCEPTANCE_CASE}, {ACCEPTANCE_QUERY}, first query): planner "
            f"chose {a['planner']} ({a['planner_parallel_runs']}/{a['runs']} runs parallel); off "
            f"{a['off_ms']:.1f} ms vs chosen {a['chosen_ms']:.1f} ms = {a['speedup']:.2f}x; same rows: "
            f"{'yes' if a['same_rows'] else 'NO'}; target parallel and >= {a['required_speedup']}x: "
            f"{'met' if a['met'] else 'NOT met'}.")


def totals_sentence(t: dict[str, Any]) -> str:
    skipped = (f" {t['skipped']} cases SKIPPED ({'; '.join(t['skipped_reasons'])})." if t["skipped"] else "")
    if not t["cases"]:
        return "No real-session case ran." + skipped
    return (f"Planner chose the faster plan in {t['faster_chosen']} of {t['cases']} cases "
            f"(case x size x query x first/second query; {100 * t['faster_chosen_share']:.0f}%; first queries "
            f"{t['faster_chosen_first']}/{t['cases_first']}, second queries "
            f"{t['faster_chosen_second']}/{t['cases_second']}); regret above 10% in {t['regret_over_10pct']} "
            f"cases, worst {t['worst_regret_pct']:+.1f}% ({t['worst_regret_case']}); noise: chosen's own runs "
            f"differed from the configuration running the same plan by up to "
            f"{fmt_pct(t['largest_same_plan_diff_pct']).lstrip('+')}, and their worst regret against the best "
            f"configuration's own runs is {t['worst_own_regret_pct']:+.1f}%"
            + (f"; in {t['misses_tied']} of the {t['misses']} misses the serial and parallel plans' runs do "
               f"not differ significantly (Mann-Whitney p >= {TIE_P})" if t["misses"] else "")
            + (f" ({t['misses_untested']} had too few runs for the test to find any difference)"
               if t["misses_untested"] else "")
            + (f"; the planner's choice varied between repetitions in {t['mixed_choices']} cases"
               if t["mixed_choices"] else "") + "." + skipped)


def markdown(results: SessionResults, rows: list[dict[str, Any]]) -> list[str]:
    t = totals(rows)
    lines = [
        "## Real sessions: tables written just before the query (decision grid, issue 10)", "",
        f"A session with temp_buffers={results.temp_buffers} writes the table, then queries it twice. "
        f"Configurations, interleaved, each on a table rebuilt just before it: off "
        f"(`pg_tempbuf.parallel_scan = off`), chosen (on, default costs, "
        f"max_parallel_workers_per_gather={results.workers_per_gather}: the planner's plan, from EXPLAIN), "
        f"forced (on, parallel forced).  {copies_note(results)}  The second query follows the first of "
        "the same configuration (after a parallel first query the pages are clean; after a serial one "
        "they stay dirty).  "
        f"{results.repetitions} repetitions.  Each plan's time is the median over every run of that plan "
        "(EXPLAIN digest): chosen's runs join off's (serial) or forced's (parallel).  Regret = "
        "median(chosen plan) / median(faster plan) - 1; own regret = median(chosen's own runs) / "
        "min(median(off), median(forced)) - 1 and same plan = chosen's own runs against the configuration "
        "that ran the same plan, both gauges of noise; p = two-sided Mann-Whitney U p-value of the serial "
        "plan's runs against the parallel plan's (large: the runs cannot tell which plan is faster).", "",
        *[f"* `{name}`: {text}" for name, text in CASES.items()], "",
        totals_sentence(t), "",
        acceptance_sentence(acceptance(rows)), "",
        "| case | rows | query | query no. | dirty pages / pages | serial plan ms | parallel plan ms | faster | "
        "p | planner | faster chosen | regret | off ms | chosen ms | forced ms | own regret | same plan | "
        "chosen vs off |",
        "|---|---:|---|---|---:|---:|---:|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        if r["status"] == "skipped":
            lines.append(f"| {r['case']} | {r['rows']:,} | {r['query']} | {r['which']} | SKIPPED: "
                         f"{r['skipped_reason']} | | | | | | | | | | | | | |")
            continue
        lines.append(
            f"| {r['case']} | {r['rows']:,} | {r['query']} | {r['which']} | {r['dirty_pages']:.0f} / {r['pages']} | "
            f"{r['serial_plan_ms']:.1f} ({r['serial_plan_runs']}) | {r['parallel_plan_ms']:.1f} "
            f"({r['parallel_plan_runs']}) | {r['faster']} | {fmt_p(r['plans_differ_p'])} | "
            f"{r['planner']} ({r['planner_parallel_runs']}/{r['runs']}) | {'yes' if r['faster_chosen'] else 'NO'} | "
            f"{fmt_pct(r['regret_pct'])} | {r['off_ms']:.1f} | {r['chosen_ms']:.1f} | {r['forced_ms']:.1f} | "
            f"{fmt_pct(r['own_regret_pct'])} | {fmt_pct(r['same_plan_diff_pct'])} | "
            f"{r['speedup_chosen_vs_off']:.2f}x |")
    if t.get("forced_not_parallel"):
        lines += ["", f"Note: in {t['forced_not_parallel']} case rows the forced configuration did not always "
                      "get a parallel plan (see sessions_raw.csv)."]
    return lines + [""]


def copies_note(results: SessionResults) -> str:
    if not results.copy_guc_known:
        return f"The server has no setting `{COPY_GUC}`: no_copies is skipped."
    return f"`{COPY_GUC}` keeps the server's default except in no_copies."


def print_console(results: SessionResults, rows: list[dict[str, Any]], console: Console) -> None:
    table = Table(title=f"Real sessions: table written just before the query (temp_buffers={results.temp_buffers}, "
                        f"median of {results.repetitions}, ms)")
    for name in ("case", "rows", "query", "query no.", "serial plan", "parallel plan", "planner", "faster",
                 "regret"):
        table.add_column(name, justify="right" if name in ("rows", "serial plan", "parallel plan", "regret")
                         else "left")
    for r in rows:
        if r["status"] == "skipped":
            if r["which"] == "first":
                table.add_row(r["case"], f"{r['rows']:,}", r["query"], "-", "[yellow]SKIPPED[/yellow]", "", "",
                              "", "")
            continue
        planner = r["planner"] if r["faster_chosen"] else f"[red]{r['planner']}[/red]"
        table.add_row(r["case"], f"{r['rows']:,}", r["query"], r["which"], f"{r['serial_plan_ms']:.1f}",
                      f"{r['parallel_plan_ms']:.1f}", planner, r["faster"], fmt_pct(r["regret_pct"]))
    console.print(table)
    console.print(f"Real sessions: {totals_sentence(totals(rows))}")
    console.print(acceptance_sentence(acceptance(rows)))
    for r in rows:
        if r["status"] == "skipped" and r["which"] == "first":
            console.print(f"Real sessions: {r['case']}, {r['rows']:,} rows, {r['query']}: SKIPPED: "
                          f"{r['skipped_reason']}", style="yellow")


def section_table(results: SessionResults, rows: list[dict[str, Any]]) -> rs.Table:
    t = totals(rows)
    return rs.Table(
        columns=["case", "rows", "query", "query no.", "status", "serial plan ms", "parallel plan ms", "faster",
                 "planner", "faster chosen", "regret %", "off ms", "chosen ms", "forced ms", "chosen vs off (x)"],
        rows=[[r["case"], r["rows"], r["query"], r["which"], r["status"] if r["status"] == "ok"
               else f"skipped: {r['skipped_reason']}", r.get("serial_plan_ms"), r.get("parallel_plan_ms"),
               r.get("faster"), r.get("planner"), r.get("faster_chosen"), r.get("regret_pct"), r.get("off_ms"),
               r.get("chosen_ms"), r.get("forced_ms"), r.get("speedup_chosen_vs_off")] for r in rows],
        caption=f"Real sessions (temp_buffers={results.temp_buffers}, table rebuilt before every run, median of "
                f"{results.repetitions}): " + totals_sentence(t) + " " + acceptance_sentence(acceptance(rows)),
    )


def plot(rows: list[dict[str, Any]], path: Path) -> bool:
    """Speedup over off of forced and chosen, per case, first and second query; False when nothing ran."""
    ran = [r for r in rows if r["status"] == "ok"]
    if not ran:
        return False
    from matplotlib.patches import Patch

    from pglab.plotting import plt  # matplotlib is slow to import

    fig, axes = plt.subplots(1, 2, figsize=(max(8.0, 0.5 * len(ran)), 4.4), squeeze=False, sharey=True)
    for ax, which in zip(axes[0], QUERY_ORDINALS, strict=True):
        part = [r for r in ran if r["which"] == which]
        xs = range(len(part))
        ax.bar([x - 0.2 for x in xs], [r["serial_plan_ms"] / r["parallel_plan_ms"] for r in part], width=0.4,
               color="lightgrey")
        ax.bar([x + 0.2 for x in xs], [r["speedup_chosen_vs_off"] for r in part], width=0.4,
               color=["tab:green" if r["faster_chosen"] else "tab:red" for r in part])
        ax.axhline(1.0, color="grey", linewidth=0.8)
        ax.set_xticks(list(xs), [f"{r['case']}/{r['rows'] // 1000}k/{r['query'][:5]}" for r in part],
                      rotation=70, fontsize="x-small")
        ax.set_title(f"{which} query on the new table")
        ax.set_ylabel("speedup over off")
    fig.legend(handles=[Patch(color="lightgrey", label="parallel plan (every run of it)"),
                        Patch(color="tab:green", label="planner's choice (own runs), the faster plan"),
                        Patch(color="tab:red", label="planner's choice (own runs), the slower plan")],
               loc="lower center", ncol=3, fontsize="small")
    fig.suptitle("Real sessions: tables written just before the query")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True
