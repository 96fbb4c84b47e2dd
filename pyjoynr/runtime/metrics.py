"""Latency histograms the components keep for their metrics. Pure: no I/O, no metrics library.

A component that times something (an MQTT publish until its PUBACK, a call to the GCD, a store
write) observes the duration in a :class:`LatencyHistogram`: one list index and two additions
per observation, cheaper than a metrics library's histogram (no lock, no labels looked up).
The admin endpoint reads the histograms when it is scraped (:meth:`LatencyHistogram.snapshot`)
and writes them in the Prometheus format (``admin.exposition``). :class:`LatencyHistograms`
keeps one histogram per label value (a method name, an operation), made on first use.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final

__all__ = ["DEFAULT_BOUNDS_S", "HistogramSnapshot", "LatencyHistogram", "LatencyHistograms"]

#: upper bounds of the buckets (seconds): from half a millisecond (a publish to a broker on
#: the same host) to ten seconds (a GCD call that times out)
DEFAULT_BOUNDS_S: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                           1.0, 2.5, 5.0, 10.0)


@dataclass(frozen=True, slots=True)
class HistogramSnapshot:
    """A histogram at one moment: ``buckets`` are (upper bound, observations <= it) pairs,
    cumulative, the last one's bound infinite; ``count`` and ``total_s`` as Prometheus's
    ``_count`` and ``_sum``."""

    buckets: tuple[tuple[float, int], ...]
    count: int
    total_s: float

    @property
    def mean_s(self) -> float | None:
        return self.total_s / self.count if self.count else None

    def quantile_s(self, q: float) -> float | None:
        """The upper bound of the bucket that holds the ``q`` quantile (an estimate: the
        bucket, not the value); None without observations."""
        if not self.count:
            return None
        rank = q * self.count
        for bound, cumulative in self.buckets:
            if cumulative >= rank:
                return bound
        return self.buckets[-1][0]


class LatencyHistogram:
    """Durations (seconds) in fixed buckets; ``observe`` is the only call on a hot path."""

    __slots__ = ("_bounds", "_counts", "_total")

    def __init__(self, bounds: Sequence[float] = DEFAULT_BOUNDS_S) -> None:
        if list(bounds) != sorted(set(bounds)) or not bounds:
            raise ValueError("bucket bounds must be distinct and ascending")
        self._bounds = tuple(float(b) for b in bounds)
        self._counts = [0] * (len(self._bounds) + 1)  # the last bucket: above every bound
        self._total = 0.0

    def observe(self, seconds: float) -> None:
        # bisect_left: the first bound >= seconds, Prometheus's "le" (less or equal)
        self._counts[bisect_left(self._bounds, seconds)] += 1
        self._total += seconds

    @property
    def count(self) -> int:
        return sum(self._counts)

    def snapshot(self) -> HistogramSnapshot:
        buckets = []
        cumulative = 0
        for bound, count in zip((*self._bounds, float("inf")), self._counts, strict=True):
            cumulative += count
            buckets.append((bound, cumulative))
        return HistogramSnapshot(tuple(buckets), cumulative, self._total)


class LatencyHistograms:
    """One :class:`LatencyHistogram` per label value, made on first use. The label values
    are the component's own (method names, operations), never a peer's: their number is
    bounded by the code."""

    __slots__ = ("_bounds", "_by_label")

    def __init__(self, bounds: Sequence[float] = DEFAULT_BOUNDS_S) -> None:
        self._bounds = tuple(bounds)
        self._by_label: dict[str, LatencyHistogram] = {}

    def __getitem__(self, label: str) -> LatencyHistogram:
        histogram = self._by_label.get(label)
        if histogram is None:
            histogram = self._by_label[label] = LatencyHistogram(self._bounds)
        return histogram

    def observe(self, label: str, seconds: float) -> None:
        self[label].observe(seconds)

    def items(self) -> Iterator[tuple[str, LatencyHistogram]]:
        return iter(sorted(self._by_label.items()))
