"""What a sequence-cache run found: per variant, throughput by clients and where it stops scaling."""

from __future__ import annotations

from dataclasses import dataclass

from pglab.experiments.sequence_cache.runner import PerfPoint, SequenceCacheResult

# "Scaling stops" at the smallest client count that no larger count beats by more than 5%.
SCALING_GAIN = 1.05
# "Linear up to" the largest count reached by steps up the client grid that each gave at least 80%
# of the proportional gain: TPS(next) >= 0.8 x (next / previous) x TPS(previous).
LINEAR_EFFICIENCY = 0.8
# Above this, TPS(1) was held back by something other than CPU (round-trip and wake-up latency).
SUPERLINEAR_EFFICIENCY = 1.2


@dataclass(frozen=True)
class Scaling:
    peak_clients: int
    peak: float
    stops_at: int
    linear_up_to: int
    efficiency: dict[int, float]  # clients -> TPS(c) / (c * TPS(1)), when 1 client was measured

    @property
    def superlinear(self) -> bool:
        return any(e > SUPERLINEAR_EFFICIENCY for e in self.efficiency.values())


def scaling(by_clients: dict[int, float]) -> Scaling:
    """by_clients: client count -> throughput (any unit); needs at least one point."""
    if not by_clients:
        raise ValueError("no points")
    counts = sorted(by_clients)
    peak_clients = max(counts, key=lambda c: by_clients[c])
    stops_at = next(c for c in counts
                    if all(by_clients[d] <= SCALING_GAIN * by_clients[c] for d in counts if d > c))
    linear_up_to = counts[0]
    for previous, following in zip(counts, counts[1:], strict=False):
        gain = by_clients[following] / by_clients[previous] if by_clients[previous] else 0.0
        if gain < LINEAR_EFFICIENCY * following / previous:
            break
        linear_up_to = following
    base = by_clients.get(1)
    efficiency = {c: by_clients[c] / (c * base) for c in counts} if base else {}
    return Scaling(peak_clients, by_clients[peak_clients], stops_at, linear_up_to, efficiency)


@dataclass
class VariantSummary:
    variant: str
    kind: str
    calls_per_transaction: int
    tps_by_clients: dict[int, float]
    scaling: Scaling
    perf: PerfPoint | None  # at the largest client count perf ran for

    @property
    def peak_nextval_per_s(self) -> float:
        return self.scaling.peak * self.calls_per_transaction


def summarize(result: SequenceCacheResult) -> list[VariantSummary]:
    summaries = []
    for kind in result.options.kinds:
        for variant in result.variants:
            points = [p for p in result.points if p.variant == variant.name and p.kind == str(kind)]
            if not points:
                continue
            tps = {p.clients: p.tps for p in points}
            perfs = [q for q in result.perf_points if q.variant == variant.name and q.kind == str(kind)]
            summaries.append(VariantSummary(
                variant=variant.name, kind=str(kind), calls_per_transaction=points[0].calls_per_transaction,
                tps_by_clients=tps, scaling=scaling(tps),
                perf=max(perfs, key=lambda q: q.clients) if perfs else None,
            ))
    return summaries
