"""`perf record -e cpu-clock` of a server's backends, and the share of their samples per function.

perf attaches to the postmaster with inheritance, so every backend forked while it runs (the
pgbench connections) is sampled; the samples are then narrowed to the pids pgbench's
connections had (pg_stat_activity.application_name = 'pgbench').  cpu-clock is a software
event, which works on virtual machines where hardware counters (cycles) do not.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

FREQUENCY_HZ = 999
ATTACH_S = 0.3  # perf has no "ready" signal; backends forked before it attaches are missed
KERNEL_ADDRESS = 0xFFFF800000000000
UNKNOWN = "[unknown]"
INSTALL_HINT = "apt-get install linux-perf"

# Spinlock functions (the article's s_lock and its helpers) and LWLock functions.
SPINLOCK_SYMBOLS = frozenset({
    "s_lock", "s_unlock", "tas", "spin_delay", "pg_spin_delay", "perform_spin_delay", "finish_spin_delay",
})
LWLOCK_PREFIX = "LWLock"


def is_spinlock(symbol: str) -> bool:
    return symbol in SPINLOCK_SYMBOLS


def is_lwlock(symbol: str) -> bool:
    return symbol.startswith(LWLOCK_PREFIX)


def unavailable_reason() -> str | None:
    """Why perf cannot sample here, or None."""
    if shutil.which("perf") is None:
        return f"perf is not installed ({INSTALL_HINT})"
    probe = subprocess.run(["perf", "record", "-e", "cpu-clock", "-o", "/dev/null", "--", "true"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        lines = [ln.strip() for ln in probe.stderr.splitlines() if ln.strip()]
        return f"perf record -e cpu-clock does not work here: {lines[0] if lines else probe.returncode}"
    return None


@dataclass
class SymbolShares:
    """Samples of the selected pids: total, per symbol, and the two lock families."""

    samples: int = 0
    kernel: int = 0
    unknown: int = 0
    spinlock: int = 0
    lwlock: int = 0
    by_symbol: Counter[str] = field(default_factory=Counter)

    def share(self, count: int) -> float | None:
        return count / self.samples if self.samples else None

    def top(self, n: int) -> list[tuple[str, float]]:
        return [(sym, c / self.samples) for sym, c in self.by_symbol.most_common(n)] if self.samples else []


def parse_script(output: str, pids: set[int]) -> SymbolShares:
    """`perf script -F pid,ip,sym` lines -> shares of the samples whose pid is in `pids`."""
    shares = SymbolShares()
    for line in output.splitlines():
        parts = line.split(None, 2)
        if len(parts) < 2:
            continue
        try:
            pid, ip = int(parts[0]), int(parts[1], 16)
        except ValueError:
            continue
        if pid not in pids:
            continue
        symbol = parts[2].strip() if len(parts) > 2 and parts[2].strip() else UNKNOWN
        shares.samples += 1
        shares.by_symbol[symbol] += 1
        if ip >= KERNEL_ADDRESS:
            shares.kernel += 1
        if symbol == UNKNOWN:
            shares.unknown += 1
        if is_spinlock(symbol):
            shares.spinlock += 1
        elif is_lwlock(symbol):
            shares.lwlock += 1
    return shares


class PerfRecorder:
    """perf record -e cpu-clock -p <postmaster> (children inherit) into `output` until stop()."""

    def __init__(self, postmaster_pid: int, output: Path) -> None:
        self.postmaster_pid = postmaster_pid
        self.output = output
        self._process: subprocess.Popen[str] | None = None
        self.stderr = ""

    def start(self) -> None:
        self._process = subprocess.Popen(
            ["perf", "record", "-e", "cpu-clock", "-F", str(FREQUENCY_HZ), "-p", str(self.postmaster_pid),
             "-o", str(self.output)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        time.sleep(ATTACH_S)
        if self._process.poll() is not None:
            self.stop()
            raise PerfError(f"perf record exited at once: {self._first_error()}")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        try:
            _, self.stderr = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            _, self.stderr = process.communicate()

    def shares(self, pids: set[int]) -> SymbolShares:
        if not self.output.is_file():
            raise PerfError(f"perf wrote no data: {self._first_error()}")
        result = subprocess.run(["perf", "script", "-i", str(self.output), "-F", "pid,ip,sym"],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise PerfError(f"perf script failed: {result.stderr.strip()[:200]}")
        return parse_script(result.stdout, pids)

    def _first_error(self) -> str:
        lines = [ln.strip() for ln in self.stderr.splitlines() if ln.strip()]
        return lines[0] if lines else "no message"


class PerfError(Exception):
    pass


def postmaster_pid(data_dir: Path) -> int | None:
    """The postmaster's pid from postmaster.pid, when this machine can read it."""
    try:
        return int((data_dir / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
