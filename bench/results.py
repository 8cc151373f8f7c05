"""The figures of a benchmark run: a :class:`Result` per figure, its :class:`Target`, medians, and the CPU the
machine spent meanwhile (:class:`CpuSnapshot`)."""

from __future__ import annotations

import contextlib
import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class CpuSnapshot:
    """Busy CPU seconds of the whole machine and of this process with its reaped children."""

    machine: float
    ours: float

    @staticmethod
    def take() -> CpuSnapshot:
        """Read ``/proc/stat`` and :func:`os.times` (machine is 0 where there is no ``/proc``)."""
        machine = 0.0
        with contextlib.suppress(OSError):
            fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
            ticks = [int(f) for f in fields]
            # user nice system idle iowait irq softirq steal …: everything but idle and iowait is busy.
            machine = (sum(ticks[:8]) - ticks[3] - ticks[4]) / CLOCK_TICKS
        t = os.times()
        return CpuSnapshot(machine, t.user + t.system + t.children_user + t.children_system)

    def others_since(self, start: CpuSnapshot, elapsed_s: float) -> str:
        """How busy other processes kept the machine since ``start``, in CPUs."""
        others = max((self.machine - start.machine) - (self.ours - start.ours), 0.0)
        return f"other processes kept {others / max(elapsed_s, 1e-9):.2f} of {os.cpu_count()} CPUs busy"


@dataclass(frozen=True)
class Target:
    """A goal for one figure: ``op`` is ``<=`` or ``>=``; ``on_ratio`` compares bridge/peer."""

    op: str
    value: float
    on_ratio: bool = False

    def met(self, result: Result) -> bool | None:
        """Whether the figure meets the goal (None when there is no figure to compare)."""
        figure = result.ratio if self.on_ratio else result.bridge
        if figure is None:
            return None
        return figure <= self.value if self.op == "<=" else figure >= self.value

    def describe(self) -> str:
        """``ratio ≤ 0.25``, ``≥ 400``…"""
        symbol = "≤" if self.op == "<=" else "≥"
        return f"{'ratio ' if self.on_ratio else ''}{symbol} {self.value:g}"


@dataclass
class Result:
    """One figure of the report."""

    name: str
    unit: str
    bridge: float | None
    peer: float | None = None
    n: int = 0
    target: Target | None = None
    error: str | None = None
    note: str | None = None
    #: How many suspended runs the server held (the scale figures).
    pending_runs: int | None = None

    @classmethod
    def timed(
        cls,
        name: str,
        bridge_s: Sequence[float],
        peer_s: Sequence[float] | None = None,
        *,
        target: Target | None = None,
        note: str | None = None,
    ) -> Result:
        """A figure in milliseconds: the median of each side's samples (in seconds), over the bridge's samples."""
        peer = None if peer_s is None else median_ms(peer_s)
        return cls(name, "ms", median_ms(bridge_s), peer, n=len(bridge_s), target=target, note=note)

    @property
    def ratio(self) -> float | None:
        """bridge / peer, when both exist."""
        if self.bridge is None or self.peer is None or self.peer == 0:
            return None
        return self.bridge / self.peer

    def to_json(self) -> dict[str, Any]:
        """The JSON entry: ``{bridge, peer, unit, ratio, n}`` (plus ``error`` when it failed, ``pending_runs``
        for the scale figures)."""
        doc: dict[str, Any] = {
            "bridge": _rounded(self.bridge),
            "peer": _rounded(self.peer),
            "unit": self.unit,
            "ratio": _rounded(self.ratio),
            "n": self.n,
        }
        if self.error is not None:
            doc["error"] = self.error
        if self.pending_runs is not None:
            doc["pending_runs"] = self.pending_runs
        return doc


def _rounded(value: float | None) -> float | None:
    return None if value is None else float(f"{value:.6g}")


def median(samples: Sequence[float]) -> float | None:
    """The median, or None for no samples."""
    return statistics.median(samples) if samples else None


def median_ms(seconds: Sequence[float]) -> float | None:
    """The median of samples in seconds, in milliseconds."""
    value = median(seconds)
    return None if value is None else value * 1000
