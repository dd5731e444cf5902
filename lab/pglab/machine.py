"""What the measurements ran on: CPU, memory, the filesystem under a directory."""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

import psutil


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def filesystem_of(path: Path) -> dict[str, Any]:
    """Mount point, type and device of the filesystem holding `path`, and its free space."""
    resolved = os.path.realpath(path)
    best: Any = None
    for partition in psutil.disk_partitions(all=True):
        mount = partition.mountpoint
        inside = resolved == mount or resolved.startswith(mount.rstrip("/") + "/")
        if inside and (best is None or len(mount) > len(best.mountpoint)):
            best = partition
    info: dict[str, Any] = {"path": resolved}
    if best is not None:
        info.update(mountpoint=best.mountpoint, fstype=best.fstype, device=best.device)
    try:
        usage = psutil.disk_usage(resolved)
        info.update(total_bytes=usage.total, free_bytes=usage.free)
    except OSError:
        pass
    return info


def shmem_huge_pages() -> str | None:
    """The kernel's transparent huge pages policy for shared memory (memfds, shared anonymous
    mappings), the selected word of transparent_hugepage/shmem_enabled: `never` on most
    distributions; pg_tempbuf's pool asks for huge pages, which `advise`, `within_size` and
    `always` grant.  None where the kernel has no such file."""
    try:
        return selected_word(Path("/sys/kernel/mm/transparent_hugepage/shmem_enabled").read_text())
    except OSError:
        return None


def selected_word(text: str) -> str | None:
    """The word a sysfs choice file selects: `[advise]` in `always within_size [advise] never`."""
    for word in text.split():
        if word.startswith("[") and word.endswith("]"):
            return word[1:-1]
    return None


def machine_info() -> dict[str, Any]:
    memory = psutil.virtual_memory()
    return {
        "hostname": platform.node(),
        "cpu_model": cpu_model(),
        "cpu_cores_logical": psutil.cpu_count(logical=True),
        "cpu_cores_physical": psutil.cpu_count(logical=False),
        "memory_total_bytes": memory.total,
        "memory_available_bytes": memory.available,
        "kernel": platform.release(),
        "shmem_huge_pages": shmem_huge_pages(),
        "os": platform.platform(),
        "python": platform.python_version(),
    }


def available_memory_bytes() -> int:
    return int(psutil.virtual_memory().available)


def free_disk_bytes(path: Path) -> int:
    return int(psutil.disk_usage(os.path.realpath(path)).free)
