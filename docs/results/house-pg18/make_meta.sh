#!/bin/bash
# Writes $RES/meta.json: machine, server version, commits, lab commit, notes.
# usage: make_meta.sh RES BEFORE AFTER [NOTE ...]
set -euo pipefail
RES=$1; BEFORE=$2; AFTER=$3; shift 3
PGC=${PGC:-/tmp/ab/pg18/bin/pg_config}
/work/main/.venv/bin/python - "$RES" "$BEFORE" "$AFTER" "$@" <<EOF
import json, os, platform, subprocess, sys
res, before, after, *notes = sys.argv[1:]
cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
mem_kb = next(int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemTotal"))
git = lambda *a: subprocess.run(["git", "-C", "/work/main", *a], capture_output=True, text=True).stdout.strip()
def desc(c):
    return git("log", "-1", "--format=%h %s", c)[:140]
lab_dirty = git("status", "--porcelain", "--", "lab")
meta = dict(
    before=desc(before), after=desc(after), before_id=git("rev-parse", before), after_id=git("rev-parse", after),
    pg_version=subprocess.run(["$PGC", "--version"], capture_output=True, text=True).stdout.strip(),
    nproc=os.cpu_count(), cpu_model=cpu, ram=f"{mem_kb / 1024 / 1024:.1f} GiB", kernel=platform.release(),
    started=open(os.path.join(res, "started")).read().strip() if os.path.exists(os.path.join(res, "started")) else None,
    finished=open(os.path.join(res, "finished")).read().strip() if os.path.exists(os.path.join(res, "finished")) else None,
    lab_commit=git("rev-parse", "--short", "HEAD") + (" (lab/ modified)" if lab_dirty else " (lab/ clean)"),
    notes=notes,
)
old = os.path.join(res, "meta.json")
if os.path.exists(old):
    prev = json.load(open(old))
    for k in ("regret_command",):
        if k in prev:
            meta[k] = prev[k]
json.dump(meta, open(old, "w"), indent=2)
print(json.dumps(meta, indent=2))
EOF
