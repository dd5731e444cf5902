"""Where throughput stops scaling with clients."""

from __future__ import annotations

from dataclasses import dataclass

# "Scaling stops" at the smallest client count that no larger count beats by more than 5%.
SCALING_GAIN = 1.05
# "Linear up to" the largest count (every smaller one too) with TPS >= 80% of clients x TPS(1).
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
    efficiency: dict[int, float] = {}
    linear_up_to = counts[0]
    base = by_clients.get(1)
    if base:
        efficiency = {c: by_clients[c] / (c * base) for c in counts}
        linear_up_to = 1
        for c in counts:
            if efficiency[c] < LINEAR_EFFICIENCY:
                break
            linear_up_to = c
    return Scaling(peak_clients, by_clients[peak_clients], stops_at, linear_up_to, efficiency)
