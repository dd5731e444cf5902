"""Where throughput stops scaling with clients."""

from __future__ import annotations

from dataclasses import dataclass

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
