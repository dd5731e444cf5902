"""The cluster's postmaster under callgrind, outside pg_ctl (`pglab overhead`'s instruction counts)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pglab.cluster import Cluster
from pglab.errors import LabError

START_TIMEOUT_S = 180
STOP_TIMEOUT_S = 180


@contextmanager
def postmaster_under_callgrind(cluster: Cluster, preload: str, extra: tuple[str, ...] = ()) -> Iterator[Path]:
    """The cluster's postmaster under callgrind with shared_preload_libraries = preload; yields the dump dir.
    `extra`: more callgrind options (e.g. --dump-before=FUNCTION)."""
    dump_dir = cluster.base_dir / f"callgrind-{time.monotonic_ns()}"
    dump_dir.mkdir()
    cluster.os_user.chown(dump_dir)
    log = cluster.base_dir / "callgrind-postmaster.log"
    user, group, extra_groups = cluster.os_user.subprocess_identity()
    command = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=PostgresMain", *extra,
               f"--callgrind-out-file={dump_dir}/callgrind.out.%p",
               str(cluster.install.program("postgres")), "-D", str(cluster.data_dir),
               "-c", f"shared_preload_libraries={preload}"]
    with open(log, "w", encoding="utf-8") as log_file:
        postmaster = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, cwd=cluster.base_dir,
                                      user=user, group=group, extra_groups=extra_groups)
    try:
        _wait_ready(cluster, postmaster, log)
        yield dump_dir
    finally:
        subprocess.run([str(cluster.install.program("pg_ctl")), "-D", str(cluster.data_dir), "-m", "fast", "-w",
                        "-t", str(STOP_TIMEOUT_S), "-s", "stop"], capture_output=True, cwd=cluster.base_dir,
                       user=user, group=group, extra_groups=extra_groups)
        try:
            postmaster.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            postmaster.kill()
            postmaster.wait()


def _wait_ready(cluster: Cluster, postmaster: subprocess.Popen[bytes], log: Path) -> None:
    pg_isready = str(cluster.install.program("pg_isready"))
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if postmaster.poll() is not None:
            raise LabError(f"the postmaster under callgrind exited ({postmaster.returncode}):\n"
                           + log.read_text(errors="replace")[-2000:])
        ready = subprocess.run([pg_isready, "-q", "-h", str(cluster.socket_dir), "-p", str(cluster.port)],
                               capture_output=True)
        if ready.returncode == 0:
            return
        time.sleep(0.5)
    raise LabError(f"the postmaster under callgrind was not ready within {START_TIMEOUT_S} s")
