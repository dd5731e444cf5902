"""Options, sequence variants and the client grid of the sequence-cache experiment."""

from __future__ import annotations

import argparse
import os
import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

NAME = "sequence-cache"

DEFAULT_VARIANTS = ("cache1", "cache100", "unlogged-cache1")
DEFAULT_DURATION_S = 10  # the article ran 60 s per point
QUICK_DURATION_S = 1
ARTICLE_BULK_CALLS = 1_000_000  # seq_bulk's loop in the article
QUICK_BULK_CALLS = 100_000
CLIENTS_PER_CORE_MAX = 4
UNLOGGED_SEQUENCES_SINCE = 150000


class Kind(StrEnum):
    SINGLE = "single"  # BEGIN; SELECT nextval(seq); END;  (the article's transaction (1))
    BULK = "bulk"  # BEGIN; SELECT seq_bulk(seq, N); END;  (transaction (2))


class PerfMode(StrEnum):
    MAX = "max"  # one perf run per variant and kind, at the largest client count
    ALL = "all"  # at every client count
    OFF = "off"


@dataclass(frozen=True)
class Variant:
    """A sequence: CREATE [UNLOGGED] SEQUENCE ... CACHE n."""

    name: str
    cache: int
    unlogged: bool

    @property
    def sequence(self) -> str:
        return f"pglab_seq_{self.name.replace('-', '_')}"

    @property
    def ddl(self) -> str:
        return f"CREATE {'UNLOGGED ' if self.unlogged else ''}SEQUENCE {self.sequence} CACHE {self.cache}"


_VARIANT = re.compile(r"^(unlogged-)?cache(\d+)$")


def parse_variant(text: str) -> Variant:
    match = _VARIANT.match(text.strip())
    if not match or int(match.group(2)) < 1:
        raise argparse.ArgumentTypeError(
            f"sequence variant {text!r}: expected cacheN or unlogged-cacheN with N >= 1 (e.g. cache100)"
        )
    return Variant(text.strip(), int(match.group(2)), match.group(1) is not None)


def variant_list(text: str) -> tuple[Variant, ...]:
    parts = [p for p in re.split(r"[,\s]+", text.strip()) if p]
    if not parts:
        raise argparse.ArgumentTypeError("no sequence variants given")
    return tuple({v.name: v for v in map(parse_variant, parts)}.values())


def kind_list(text: str) -> tuple[Kind, ...]:
    parts = [p for p in re.split(r"[,\s]+", text.strip()) if p]
    try:
        kinds = tuple(dict.fromkeys(Kind(p) for p in parts))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"transactions {text!r}: expected a list of {', '.join(k.value for k in Kind)}"
        ) from None
    if not kinds:
        raise argparse.ArgumentTypeError("no transaction kinds given")
    return kinds


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def default_clients(n_cores: int) -> tuple[int, ...]:
    """Powers of two and multiples of the core count, up to 4 x cores (2 cores: 1,2,4,6,8)."""
    top = CLIENTS_PER_CORE_MAX * n_cores
    powers = {2**k for k in range(top.bit_length()) if 2**k <= top}
    return tuple(sorted(powers | {n_cores * k for k in range(1, CLIENTS_PER_CORE_MAX + 1)}))


def quick_clients(n_cores: int) -> tuple[int, ...]:
    """1, the core count and 4 x cores."""
    return tuple(sorted({1, n_cores, CLIENTS_PER_CORE_MAX * n_cores}))


@dataclass(frozen=True)
class SequenceCacheOptions:
    variants: tuple[Variant, ...]
    kinds: tuple[Kind, ...]
    clients: tuple[int, ...]
    duration_s: int
    bulk_calls: int
    perf: PerfMode
    out_dir: Path | None  # None: results/sequence-cache-pg<major>
    pg_config: Path | None = None
    dsn: str | None = None
    quick: bool = False
    cores: int = 1
    perf_kinds: tuple[Kind, ...] = (Kind.SINGLE, Kind.BULK)  # which transactions get perf runs
