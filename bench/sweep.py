"""How the scale figures grow with the number of suspended runs: a table, its JSON and a small SVG plot.

``openwop-bridge bench --sweep DIR`` measures the scale scenario at several
sizes; this module writes ``scale-sweep.md`` (a Markdown table),
``scale-sweep.json`` (the same rows) and ``scale-sweep.svg`` (one small panel per
figure, runs on a logarithmic axis) into ``DIR``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape

import orjson

from openwop_bridge.bench.results import median, median_ms

if TYPE_CHECKING:
    from openwop_bridge.bench.scale import Point

#: (column, unit, how to read it from a point) in table order; the first four are plotted.
COLUMNS: tuple[tuple[str, str, Callable[[Point], float | None]], ...] = (
    ("pending_rss_mb", "MiB", lambda p: p.rss),
    ("inbox_page_ms", "ms", lambda p: median_ms(p.inbox_large)),
    ("resolve_ms", "ms", lambda p: median_ms(p.resolve_large)),
    ("restart_s", "s", lambda p: median(p.restarts)),
    ("resolve_at_scale_ratio", "x", lambda p: p.resolve_ratio),
    ("disk_bytes_per_pending_run", "B", lambda p: p.disk_bytes / p.pending),
    ("populate_runs_per_s", "runs/s", lambda p: p.pending / p.filled.wall_s),
    ("populate_cpu_ms_per_run", "ms", lambda p: p.filled.cpu_s * 1000 / p.pending),
)
PLOTTED = 4
PANEL_W, PANEL_H, MARGIN = 260, 170, 44


def rows(points: Sequence[Point]) -> list[dict[str, float | None]]:
    """One row per size: ``pending_runs`` and every column."""
    out: list[dict[str, float | None]] = []
    for point in sorted(points, key=lambda p: p.pending):
        row: dict[str, float | None] = {"pending_runs": point.pending}
        for name, _, read in COLUMNS:
            value = read(point)
            row[name] = None if value is None else float(f"{value:.4g}")
        out.append(row)
    return out


def markdown(table: list[dict[str, float | None]]) -> str:
    """The rows as a Markdown table."""
    header = ["pending_runs", *(f"{name} ({unit})" for name, unit, _ in COLUMNS)]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for row in table:
        cells = [f"{int(row['pending_runs'] or 0):,}"] + [_cell(row[name]) for name, _, _ in COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:,.4g}"


def svg(table: list[dict[str, float | None]]) -> str:
    """The first :data:`PLOTTED` columns against the runs, one panel each, side by side."""
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{PANEL_W * PLOTTED}" height="{PANEL_H}" '
        'font-family="sans-serif" font-size="11">'
    ]
    for i, (name, unit, _) in enumerate(COLUMNS[:PLOTTED]):
        parts.append(_panel(i * PANEL_W, name, unit, table))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _panel(left: int, name: str, unit: str, table: list[dict[str, float | None]]) -> str:
    points = [(float(r["pending_runs"] or 1), r[name]) for r in table if r[name] is not None]
    w, h = PANEL_W - MARGIN - 10, PANEL_H - 2 * MARGIN
    out = [f'<g transform="translate({left + MARGIN},{MARGIN})">']
    out.append(f'<text x="0" y="-24">{escape(name)} ({escape(unit)})</text>')
    out.append(f'<rect x="0" y="0" width="{w}" height="{h}" fill="none" stroke="#999"/>')
    if points:
        xs = [math.log10(x) for x, _ in points]
        top = max(v for _, v in points if v is not None) or 1.0
        lo, hi = min(xs), max(xs)
        span = hi - lo or 1.0

        def at(x: float, v: float) -> tuple[float, float]:
            return (math.log10(x) - lo) / span * w, h - v / top * h

        coords = [at(x, v) for x, v in points if v is not None]
        out.append(
            '<polyline fill="none" stroke="#2563eb" stroke-width="2" points="'
            + " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
            + '"/>'
        )
        for (x, y), (runs, value) in zip(coords, points, strict=True):
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="#2563eb"/>')
            out.append(f'<text x="{x:.1f}" y="{y - 6:.1f}" text-anchor="middle">{_cell(value)}</text>')
            out.append(f'<text x="{x:.1f}" y="{h + 14}" text-anchor="middle">{_runs(runs)}</text>')
        out.append(f'<text x="0" y="{h + 30}">suspended runs (log scale); 0 at the bottom</text>')
    out.append("</g>")
    return "\n".join(out)


def _runs(n: float) -> str:
    return f"{n / 1e6:g}M" if n >= 1e6 else f"{n / 1e3:g}k" if n >= 1e3 else f"{n:g}"


def write(folder: Path, points: Sequence[Point]) -> list[Path]:
    """Write the table, its JSON and the plot into ``folder``; returns the paths."""
    folder.mkdir(parents=True, exist_ok=True)
    table = rows(points)
    written = [folder / "scale-sweep.md", folder / "scale-sweep.json", folder / "scale-sweep.svg"]
    written[0].write_text(markdown(table))
    written[1].write_bytes(orjson.dumps(table, option=orjson.OPT_INDENT_2) + b"\n")
    written[2].write_text(svg(table))
    return written
