"""Options and the grid of the temp-extend experiment: source sizes, temp_buffers, tablespaces."""

from __future__ import annotations

import argparse
import math
import re
from dataclasses import dataclass
from pathlib import Path

NAME = "temp-extend"

# Rows of (id int, pad text) with a 100-byte pad: 58 rows per 8 KiB page, so 65,772 rows fill
# exactly 1134 blocks, the article's "9 MB" CTAS (1134 extends of 8 KiB).
DEFAULT_WIDTH = 100
ARTICLE_9MB_ROWS = 65_772
# Wider rows would be TOASTed (compressed) on the way into the temporary table.
MAX_WIDTH = 1900


@dataclass(frozen=True)
class SourceSize:
    """A permanent source table: `rows` rows of (id int, pad text of `width` bytes)."""

    label: str
    rows: int
    width: int = DEFAULT_WIDTH

    @property
    def table_name(self) -> str:
        return f"pglab_te_src_{self.rows}x{self.width}"


PRESETS = {
    "9MB": SourceSize("9MB", ARTICLE_9MB_ROWS),  # the article's 9 MB / 1134-block CTAS
    "1M": SourceSize("1M", 1_000_000),  # the article's 1M-row CTAS (narrower rows: ~135 MB)
}
DEFAULT_SIZES = ("9MB", "1M")
QUICK_SIZES = DEFAULT_SIZES
DEFAULT_ITERATIONS = 10
QUICK_ITERATIONS = 3
# "Too small" temp_buffers: 100 blocks = 800 kB, the article's value and PostgreSQL's minimum.
SMALL_TEMP_BUFFERS = 100
# "Large enough": room for the whole table, bulk-extension slack and the free space map.
LARGE_HEADROOM = 1.25
LARGE_EXTRA_BLOCKS = 128
DEFAULT_TMPFS_DIR = Path("/dev/shm")

FITS = "fits"
SMALL = "small"
TEMP_BUFFER_MODES = (FITS, SMALL)
DISK = "disk"
TMPFS = "tmpfs"

_COUNT = re.compile(r"^(\d+(?:\.\d+)?)([kKmM]?)$")


def _count(text: str) -> int:
    match = _COUNT.match(text)
    if not match:
        raise ValueError(text)
    value = float(match.group(1)) * {"": 1, "k": 10**3, "m": 10**6}[match.group(2).lower()]
    if value < 1 or value != int(value):
        raise ValueError(text)
    return int(value)


def parse_size(text: str) -> SourceSize:
    """'9MB', '1M', '250k', '2M', '1Mx1900' (rows x pad width in bytes)."""
    text = text.strip()
    if text in PRESETS:
        return PRESETS[text]
    rows_text, _, width_text = text.partition("x")
    try:
        rows = _count(rows_text)
        width = int(width_text) if width_text else DEFAULT_WIDTH
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"size {text!r}: expected 9MB, 1M, or ROWS[xWIDTH] such as 250k or 1Mx1900"
        ) from None
    if not 1 <= width <= MAX_WIDTH:
        raise argparse.ArgumentTypeError(
            f"size {text!r}: pad width must be 1..{MAX_WIDTH} bytes (wider rows would be TOASTed)"
        )
    return SourceSize(text, rows, width)


def size_list(text: str) -> tuple[SourceSize, ...]:
    parts = [p for p in re.split(r"[,\s]+", text.strip()) if p]
    if not parts:
        raise argparse.ArgumentTypeError("no sizes given")
    sizes: dict[tuple[int, int], SourceSize] = {}
    for part in parts:
        size = parse_size(part)
        sizes.setdefault((size.rows, size.width), size)
    return tuple(sizes.values())


def large_temp_buffers(table_blocks: int) -> int:
    return math.ceil(table_blocks * LARGE_HEADROOM) + LARGE_EXTRA_BLOCKS


def temp_buffers_blocks(mode: str, table_blocks: int, small_blocks: int) -> int:
    return large_temp_buffers(table_blocks) if mode == FITS else small_blocks


@dataclass(frozen=True)
class TempExtendOptions:
    sizes: tuple[SourceSize, ...]
    iterations: int
    out_dir: Path | None  # None: results/temp-extend-pg<major>
    small_temp_buffers: int = SMALL_TEMP_BUFFERS
    tmpfs_dir: Path | None = DEFAULT_TMPFS_DIR  # None: default tablespace only
    trace: bool = True  # bpftrace pass where the server has USDT probes
    pg_config: Path | None = None
    dsn: str | None = None
    quick: bool = False
