"""Cost of issue 19's guards: the 2M-row LIKE aggregate, old build (d1c8b2f) vs new, and new with
the guards turned off (debug_unprotected), fresh table and resident, plain and with a PARALLEL
RESTRICTED function above Gather (protected mode).  Interleaved, medians."""
import statistics, sys, time, platform
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3] / "lab"))
from pglab.cluster import Cluster

reps = int(sys.argv[1])
builds = {"old": sys.argv[2], "new": sys.argv[3]}
settings = {"shared_preload_libraries": "pg_tempbuf", "max_worker_processes": 8, "max_parallel_workers": 8,
            "max_parallel_workers_per_gather": 2}
clusters = {k: Cluster(v, settings=settings).start() for k, v in builds.items()}
for c in clusters.values():
    with c.connect() as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_tempbuf")

PLAIN = "SELECT count(*), max(s) FROM t WHERE s LIKE '%ab%'"
CODE = "SELECT pg_temp.touch(c), m FROM (SELECT count(*) AS c, max(s) AS m FROM t WHERE s LIKE '%ab%' OFFSET 0) x"
variants = [("old", False, PLAIN), ("new", False, PLAIN), ("new", True, PLAIN),
            ("old", False, CODE), ("new", False, CODE), ("new", True, CODE)]
times = {}
answers = {}
def one(build, unprotected, q, state):
    with clusters[build].connect(options="-c temp_buffers=512MB") as conn:
        if unprotected:
            conn.execute("SET pg_tempbuf.debug_unprotected = on")
        conn.execute("CREATE TEMP TABLE t AS SELECT g AS id, md5(g::text) AS s FROM generate_series(1, 2000000) g")
        conn.execute("CREATE INDEX t_id ON t (id)")
        conn.execute("ANALYZE t")
        conn.execute("CREATE FUNCTION pg_temp.touch(i bigint) RETURNS bigint LANGUAGE sql STABLE PARALLEL RESTRICTED "
                     "AS 'SELECT i + count(*) FROM t WHERE id = 0'")
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN (COSTS OFF) " + q).fetchall())
        assert "Temp Seq Scan" in plan and "Gather" in plan, (build, unprotected, q, state, plan)
        if state == "resident":
            conn.execute(q).fetchall()
        t0 = time.perf_counter()
        rows = conn.execute(q).fetchall()
        el = time.perf_counter() - t0
        answers.setdefault(q, rows)
        assert rows == answers[q], (rows, answers[q])
        if state == "resident" and (build, unprotected, q) not in explained:
            explained.add((build, unprotected, q))
            print(build, unprotected, q, "\n", "\n".join(r[0] for r in conn.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + q).fetchall()), flush=True)
        return el
explained = set()
for i in range(reps):
    for state in ("fresh", "resident"):
        for v in variants:
            times.setdefault((state,) + v, []).append(one(*v, state))
    print("rep", i, flush=True)
print("machine:", platform.node(), platform.machine(), "cores", __import__('os').cpu_count(), "builds", builds)
for k, c in clusters.items():
    with c.connect() as conn:
        print(k, conn.execute("SELECT version()").fetchone()[0], conn.execute("SHOW data_checksums").fetchone()[0])
for k, v in times.items():
    print(k[0], k[1], "unprotected" if k[2] else "guarded", "code" if k[3] == CODE else "plain",
          f"median {statistics.median(v)*1000:.1f} ms", [round(x*1000) for x in v])
for state in ("fresh", "resident"):
    for q, name in ((PLAIN, "plain"), (CODE, "code")):
        old = statistics.median(times[(state, "old", False, q)])
        new = statistics.median(times[(state, "new", False, q)])
        unp = statistics.median(times[(state, "new", True, q)])
        print(f"{state} {name}: new/old {new/old:.3f}  guarded/unprotected {new/unp:.3f}")
for c in clusters.values():
    c.cleanup()
