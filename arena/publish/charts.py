"""SVG charts drawn at build time, in pure Python: no plotting library, no JavaScript.

Each function returns one ``<svg>`` element as a string, ready to be inlined in a page:
a ``viewBox`` with a natural size (the stylesheet scales it down on narrow screens), a
``<title>`` and ``<desc>`` for screen readers (the page also puts a data table under
every chart), axis lines, ticks and labels, and a ``<title>`` on each mark so hovering
shows its numbers. Coordinates are rounded to 0.1 px to keep the markup small.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

PALETTE = ("#1f77b4", "#e6550d", "#2ca02c", "#9467bd", "#d62728", "#17becf", "#8c564b",
           "#e377c2", "#7f7f7f", "#bcbd22")
"""Series colours, in order (matplotlib's tab10, reordered so neighbours differ most)."""
INK = "#222"
MUTED = "#666"
GRID = "#e3e3e3"
FONT = 12
CHAR_W = 7.0
"""Approximate width of one character of the 12 px sans-serif font, for layout."""
WIDTH = 960.0
"""The natural width of the wide charts (the page scales them down to fit)."""
COMPACT_WIDTH = 360.0
"""The natural width of a chart's compact variant, drawn for phones (a narrow screen
shows it instead of the wide one, scaled to fit, so its text stays about 12 px)."""
COMPACT_NAME = 14
"""Names are cut to this many characters in a compact chart."""
MAX_POINTS = 400
"""A line is thinned to at most this many points (the chart is ~600 px wide)."""


@dataclass(frozen=True, slots=True)
class Interval:
    """One row of the ratings chart."""

    name: str
    value: float
    low: float
    high: float
    provisional: bool = False


@dataclass(frozen=True, slots=True)
class Series:
    """One line of a line chart: y values at x = 1, 2, ... (or at ``xs``)."""

    name: str
    values: Sequence[float | None]
    xs: Sequence[float] | None = None


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _f(x: float) -> str:
    """A coordinate: at most one decimal, no trailing zeros."""
    text = f"{x:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _text_width(text: str) -> float:
    return len(text) * CHAR_W


def short(name: str, limit: int = 22) -> str:
    """``name`` cut to ``limit`` characters with an ellipsis."""
    return name if len(name) <= limit else name[: limit - 1] + "…"


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values (1, 2 or 5 times a power of ten apart) that
    cover [lo, hi]; the first is <= lo and the last >= hi."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [0.0, 1.0]
    if hi <= lo:
        lo, hi = lo - 1, hi + 1
    raw = (hi - lo) / max(1, count)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.floor(lo / step + 1e-9) * step
    ticks: list[float] = []
    k = 0
    while True:
        t = first + k * step
        ticks.append(round(t, 10))
        if t >= hi - 1e-9:
            break
        k += 1
    return ticks


def _tick_label(value: float, step: float) -> str:
    if step >= 1 or value == int(value):
        return f"{value:.0f}".replace("-", "−")
    decimals = max(0, -math.floor(math.log10(step)))
    return f"{value:.{decimals}f}".replace("-", "−")


def _open(chart_id: str, width: float, height: float, title: str, desc: str,
          compact: bool = False) -> list[str]:
    return [
        f'<svg id="{escape(chart_id)}" class="{"chart-compact" if compact else "chart"}" '
        f'viewBox="0 0 {_f(width)} {_f(height)}" width="{_f(width)}" height="{_f(height)}" '
        f'role="img" aria-labelledby="{escape(chart_id)}-title {escape(chart_id)}-desc" '
        f'font-family="system-ui, -apple-system, Segoe UI, Roboto, Helvetica, Arial, '
        f'sans-serif" font-size="{FONT}">',
        f'<title id="{escape(chart_id)}-title">{escape(title)}</title>',
        f'<desc id="{escape(chart_id)}-desc">{escape(desc)}</desc>',
    ]


def _x_axis(parts: list[str], ticks: Sequence[float], x: Scale, top: float, bottom: float,
            label: str, grid: bool = True) -> None:
    """Vertical grid lines at the ticks, the axis line along ``bottom``, tick labels and
    the axis label under it."""
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    for t in ticks:
        px = _f(x(t))
        if grid:
            parts.append(f'<line x1="{px}" y1="{_f(top)}" x2="{px}" y2="{_f(bottom)}" '
                         f'stroke="{GRID}"/>')
        parts.append(f'<line x1="{px}" y1="{_f(bottom)}" x2="{px}" y2="{_f(bottom + 4)}" '
                     f'stroke="{MUTED}"/>')
        parts.append(f'<text x="{px}" y="{_f(bottom + 17)}" text-anchor="middle" '
                     f'fill="{MUTED}">{_tick_label(t, step)}</text>')
    parts.append(f'<line x1="{_f(x(ticks[0]))}" y1="{_f(bottom)}" x2="{_f(x(ticks[-1]))}" '
                 f'y2="{_f(bottom)}" stroke="{MUTED}"/>')
    mid = (x(ticks[0]) + x(ticks[-1])) / 2
    parts.append(f'<text x="{_f(mid)}" y="{_f(bottom + 36)}" text-anchor="middle" '
                 f'fill="{INK}">{escape(label)}</text>')


def _y_axis(parts: list[str], ticks: Sequence[float], y: Scale, left: float, right: float,
            label: str, fmt: str = "") -> None:
    """Horizontal grid lines at the ticks, tick labels left of ``left``, the axis label
    rotated along the left edge."""
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    for t in ticks:
        py = _f(y(t))
        parts.append(f'<line x1="{_f(left)}" y1="{py}" x2="{_f(right)}" y2="{py}" '
                     f'stroke="{GRID}"/>')
        parts.append(f'<text x="{_f(left - 6)}" y="{_f(y(t) + 4)}" text-anchor="end" '
                     f'fill="{MUTED}">{_tick_label(t, step)}{fmt}</text>')
    parts.append(f'<line x1="{_f(left)}" y1="{_f(y(ticks[0]))}" x2="{_f(left)}" '
                 f'y2="{_f(y(ticks[-1]))}" stroke="{MUTED}"/>')
    mid = (y(ticks[0]) + y(ticks[-1])) / 2
    parts.append(f'<text transform="translate(14 {_f(mid)}) rotate(-90)" text-anchor="middle" '
                 f'fill="{INK}">{escape(label)}</text>')


class Scale:
    """A linear map from the data interval [d0, d1] to pixels [p0, p1]."""

    __slots__ = ("d0", "d1", "p0", "p1")

    def __init__(self, d0: float, d1: float, p0: float, p1: float) -> None:
        self.d0, self.d1, self.p0, self.p1 = d0, d1 if d1 != d0 else d0 + 1, p0, p1

    def __call__(self, v: float) -> float:
        return self.p0 + (v - self.d0) * (self.p1 - self.p0) / (self.d1 - self.d0)


def ratings_chart(rows: Sequence[Interval], chart_id: str, title: str, desc: str,
                  axis: str = "Elo (Bradley-Terry), 95% interval", centre: float = 1500.0,
                  compact: bool = False) -> str:
    """A dot per row at its value with a whisker over its interval, one row per entry,
    best first; a dashed line at ``centre`` (the pool average). Provisional rows get a
    hollow dot. ``compact``: the phone variant (:data:`COMPACT_WIDTH` wide)."""
    row_h = 24
    limit = COMPACT_NAME if compact else 22
    label_w = max([_text_width(f"{len(rows)}. {short(r.name, limit)}") for r in rows]
                  + [40]) + 16
    width = max(COMPACT_WIDTH, label_w + 200) if compact else max(WIDTH, label_w + 420)
    top, left, right = 12, label_w, width - (14 if compact else 24)
    bottom = top + row_h * max(1, len(rows))
    height = bottom + 48
    lo = min([r.low for r in rows] + [centre])
    hi = max([r.high for r in rows] + [centre])
    pad = max(10.0, (hi - lo) * 0.04)
    ticks = nice_ticks(lo - pad, hi + pad, 3 if compact else 6)
    x = Scale(ticks[0], ticks[-1], left, right)
    parts = _open(chart_id, width, height, title, desc, compact)
    _x_axis(parts, ticks, x, top, bottom, axis)
    parts.append(f'<line x1="{_f(x(centre))}" y1="{top}" x2="{_f(x(centre))}" '
                 f'y2="{_f(bottom)}" stroke="{MUTED}" stroke-dasharray="4 3"/>')
    for i, r in enumerate(rows):
        cy = top + row_h * i + row_h / 2
        c = colour(0)
        tip = (f"{i + 1}. {r.name}: {r.value:.1f} ({r.low:.1f} to {r.high:.1f})"
               + (", provisional" if r.provisional else ""))
        parts.append(f"<g><title>{escape(tip)}</title>")
        if i % 2 == 0:
            parts.append(f'<rect x="0" y="{_f(cy - row_h / 2)}" width="{_f(right)}" '
                         f'height="{row_h}" fill="#f6f7f9"/>')
        parts.append(f'<text x="{_f(left - 10)}" y="{_f(cy + 4)}" text-anchor="end" '
                     f'fill="{INK}">{i + 1}. {escape(short(r.name, limit))}</text>')
        x0, x1 = x(r.low), x(r.high)
        parts.append(f'<path d="M{_f(x0)} {_f(cy)}H{_f(x1)}M{_f(x0)} {_f(cy - 5)}V{_f(cy + 5)}'
                     f'M{_f(x1)} {_f(cy - 5)}V{_f(cy + 5)}" stroke="{c}" stroke-width="2" '
                     f'fill="none"/>')
        fill = "#fff" if r.provisional else c
        parts.append(f'<circle cx="{_f(x(r.value))}" cy="{_f(cy)}" r="4.5" fill="{fill}" '
                     f'stroke="{c}" stroke-width="2"/></g>')
    parts.append("</svg>")
    return "".join(parts)


def _thin(xs: Sequence[float], ys: Sequence[float | None]) -> list[tuple[float, float | None]]:
    """At most :data:`MAX_POINTS` evenly spaced points, the first and last kept."""
    n = len(ys)
    if n <= MAX_POINTS:
        return list(zip(xs, ys, strict=True))
    picks = sorted({round(k * (n - 1) / (MAX_POINTS - 1)) for k in range(MAX_POINTS)})
    return [(xs[i], ys[i]) for i in picks]


def _bounds(values: Sequence[float]) -> tuple[float, ...]:
    """The lowest and highest of ``values`` (none when empty)."""
    return (min(values), max(values)) if values else ()


def line_chart(series: Sequence[Series], chart_id: str, title: str, desc: str,
               x_label: str, y_label: str, y_range: tuple[float, float] | None = None,
               y_suffix: str = "", reference: float | None = None, markers: bool = False,
               x_integer: bool = True, legend: bool = True, width: float = WIDTH,
               compact: bool = False) -> str:
    """One coloured line per series with a legend on the right (unless ``legend`` is
    false). ``None`` values leave a gap. ``reference`` draws a dashed horizontal line
    (e.g. the starting Elo). ``compact``: the phone variant, :data:`COMPACT_WIDTH` wide,
    its legend under the plot in two columns."""
    limit = COMPACT_NAME if compact else 22
    if compact:
        width, label_w = COMPACT_WIDTH, -30.0
        left, top = 52.0, 12.0
        right = width - 14
        bottom = 190.0
        legend_rows = (len(series) + 1) // 2 if legend else 0
        height = bottom + 48 + 18 * legend_rows
    else:
        label_w = max([_text_width(short(s.name)) for s in series] + [40]) if legend else -30.0
        width = max(width, 420 + label_w + 40)
        left, top = 64.0, 12.0
        right = width - label_w - 44
        bottom = max(260.0, top + 20 * len(series) + 10)
        height = bottom + 48
    # The points are read where they are (a bot's history may hold 100,000): only the
    # few hundred drawn are made into tuples.
    columns = [(s.xs or range(1, len(s.values) + 1), s.values)
               for s in series]
    for s, (xs_, ys_) in zip(series, columns, strict=True):
        if len(xs_) != len(ys_):
            raise ValueError(f"series {s.name!r}: {len(xs_)} x values, {len(ys_)} y values")
    all_x = [v for xs_, _ in columns if len(xs_) for v in (min(xs_), max(xs_))]
    all_y = [v for _, ys_ in columns
             for v in _bounds([y for y in ys_ if y is not None])]
    if reference is not None:
        all_y.append(reference)
    x_lo, x_hi = (min(all_x), max(all_x)) if all_x else (0.0, 1.0)
    if y_range is not None:
        y_lo, y_hi = y_range
    else:
        y_lo, y_hi = (min(all_y), max(all_y)) if all_y else (0.0, 1.0)
    x_ticks = nice_ticks(x_lo, x_hi, 4 if compact else 8)
    if x_integer:
        x_ticks = [t for t in x_ticks if t == int(t)] or x_ticks
        if len(x_ticks) < 2:
            x_ticks = [x_lo, x_lo + 1]
    y_ticks = nice_ticks(y_lo, y_hi, 4 if compact else 5)
    x = Scale(x_ticks[0], x_ticks[-1], left, right)
    y = Scale(y_ticks[0], y_ticks[-1], bottom, top)
    parts = _open(chart_id, width, height, title, desc, compact)
    _y_axis(parts, y_ticks, y, left, right, y_label, y_suffix)
    _x_axis(parts, x_ticks, x, top, bottom, x_label, grid=False)
    if reference is not None:
        parts.append(f'<line x1="{_f(left)}" y1="{_f(y(reference))}" x2="{_f(right)}" '
                     f'y2="{_f(y(reference))}" stroke="{MUTED}" stroke-dasharray="4 3"/>')
    for i, (s, (xs, ys)) in enumerate(zip(series, columns, strict=True)):
        c = colour(i)
        path: list[str] = []
        pen_up = True
        for px, py in _thin(xs, ys):
            if py is None:
                pen_up = True
                continue
            path.append(f"{'M' if pen_up else 'L'}{_f(x(px))} {_f(y(py))}")
            pen_up = False
        parts.append(f"<g><title>{escape(s.name)}</title>")
        if path:
            parts.append(f'<path d="{"".join(path)}" fill="none" stroke="{c}" '
                         f'stroke-width="2" stroke-linejoin="round" stroke-linecap="round"/>')
        if markers:
            for px, py in zip(xs, ys, strict=True):
                if py is not None:
                    parts.append(f'<circle cx="{_f(x(px))}" cy="{_f(y(py))}" r="2.5" '
                                 f'fill="{c}"/>')
        parts.append("</g>")
        if not legend:
            continue
        if compact:  # under the axis label, two to a row
            lx = 8 + (width - 16) / 2 * (i % 2)
            ly = bottom + 58 + 18 * (i // 2)
        else:
            lx, ly = right + 16, top + 10 + 20 * i
        parts.append(f'<rect x="{_f(lx)}" y="{_f(ly - 5)}" width="14" height="4" '
                     f'rx="1" fill="{c}"/><text x="{_f(lx + 20)}" y="{_f(ly + 1)}" '
                     f'fill="{INK}">{escape(short(s.name, limit))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _mix(a: str, b: str, t: float) -> str:
    """The colour a fraction ``t`` of the way from ``a`` to ``b`` (``#rrggbb``)."""
    ca = [int(a[i:i + 2], 16) for i in (1, 3, 5)]
    cb = [int(b[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(p + (q - p) * t):02x}" for p, q in zip(ca, cb, strict=True))


LOSS, EVEN, WIN = "#d6604d", "#f7f7f7", "#4393c3"


def score_colour(score: float) -> str:
    """A diverging colour for a score 0..1: red below 0.5, white at 0.5, blue above."""
    score = min(1.0, max(0.0, score))
    return _mix(EVEN, LOSS, (0.5 - score) * 2) if score < 0.5 else _mix(EVEN, WIN,
                                                                           (score - 0.5) * 2)


def heat_map(names: Sequence[str], scores: Mapping[tuple[str, str], float], chart_id: str,
             title: str, desc: str, compact: bool = False) -> str:
    """A square of cells: row bot's score against the column bot, 0..100%. Rows are
    labelled with rank and name, columns with the rank (names would not fit).
    ``compact``: the phone variant, about :data:`COMPACT_WIDTH` wide, its colour scale
    under the square."""
    n = max(1, len(names))
    limit = COMPACT_NAME if compact else 22
    label_w = max([_text_width(f"{i + 1}. {short(s, limit)}") for i, s in enumerate(names)]
                  + [40]) + 14
    cell = (max(18.0, min(36.0, (COMPACT_WIDTH - label_w - 12) / n)) if compact
            else max(18.0, min(44.0, 560 / n)))
    left, top = label_w, 40.0
    size = cell * n
    if compact:
        width = max(left + size + 12, COMPACT_WIDTH)
        height = top + size + 56
    else:
        width = max(left + size + 150, 420.0)
        height = top + size + 30
    parts = _open(chart_id, width, height, title, desc, compact)
    small = cell < 30
    parts.append(f'<text x="{_f(left + size / 2)}" y="14" text-anchor="middle" '
                 f'fill="{INK}">opponent (rank)</text>')
    for j in range(len(names)):
        parts.append(f'<text x="{_f(left + cell * j + cell / 2)}" y="{_f(top - 8)}" '
                     f'text-anchor="middle" fill="{MUTED}">{j + 1}</text>')
    for i, a in enumerate(names):
        y0 = top + cell * i
        parts.append(f'<text x="{_f(left - 8)}" y="{_f(y0 + cell / 2 + 4)}" text-anchor="end" '
                     f'fill="{INK}">{i + 1}. {escape(short(a, limit))}</text>')
        for j, b in enumerate(names):
            x0 = left + cell * j
            if a == b:
                parts.append(f'<rect x="{_f(x0)}" y="{_f(y0)}" width="{_f(cell)}" '
                             f'height="{_f(cell)}" fill="#e8e8e8" stroke="#fff"/>')
                continue
            score = scores.get((a, b))
            if score is None:
                parts.append(f'<rect x="{_f(x0)}" y="{_f(y0)}" width="{_f(cell)}" '
                             f'height="{_f(cell)}" fill="#fff" stroke="#ddd"><title>'
                             f'{escape(a)} and {escape(b)} never met</title></rect>')
                continue
            fill = score_colour(score)
            dark = abs(score - 0.5) > 0.3
            parts.append(
                f'<g><title>{escape(a)} vs {escape(b)}: {100 * score:.1f}%</title>'
                f'<rect x="{_f(x0)}" y="{_f(y0)}" width="{_f(cell)}" height="{_f(cell)}" '
                f'fill="{fill}" stroke="#fff"/>')
            if not small or n <= 24:
                parts.append(
                    f'<text x="{_f(x0 + cell / 2)}" y="{_f(y0 + cell / 2 + 4)}" '
                    f'text-anchor="middle" font-size="{10 if small else 11}" '
                    f'fill="{"#fff" if dark else INK}">{100 * score:.0f}</text>')
            parts.append("</g>")
    # legend: a colour ramp 0..100%
    steps = 10
    if compact:  # across, under the square: lost all on the left, won all on the right
        ly, lh = top + size + 12, 12.0
        step_w = size / steps
        for k in range(steps):
            parts.append(f'<rect x="{_f(left + k * step_w)}" y="{_f(ly)}" '
                         f'width="{_f(step_w)}" height="{_f(lh)}" '
                         f'fill="{score_colour((k + 0.5) / steps)}"/>')
        parts.append(f'<rect x="{_f(left)}" y="{_f(ly)}" width="{_f(size)}" '
                     f'height="{_f(lh)}" fill="none" stroke="#ccc"/>')
        for frac, anchor, text in ((0.0, "start", "0%"), (0.5, "middle", "50%"),
                                   (1.0, "end", "100% won")):
            parts.append(f'<text x="{_f(left + size * frac)}" y="{_f(ly + lh + 14)}" '
                         f'text-anchor="{anchor}" fill="{MUTED}">{text}</text>')
        parts.append("</svg>")
        return "".join(parts)
    lx, ly, lw = left + size + 30, top, 14.0
    for k in range(steps):
        s = 1 - (k + 0.5) / steps
        parts.append(f'<rect x="{_f(lx)}" y="{_f(ly + k * 16)}" width="{_f(lw)}" height="16" '
                     f'fill="{score_colour(s)}"/>')
    parts.append(f'<rect x="{_f(lx)}" y="{_f(ly)}" width="{_f(lw)}" height="{16 * steps}" '
                 f'fill="none" stroke="#ccc"/>')
    for frac, text in ((0.0, "100% won"), (0.5, "50%"), (1.0, "0% lost all")):
        parts.append(f'<text x="{_f(lx + lw + 6)}" y="{_f(ly + 16 * steps * frac + 4)}" '
                     f'fill="{MUTED}">{text}</text>')
    parts.append("</svg>")
    return "".join(parts)


def error_bar(value: float | None, low: float | None, high: float | None, lo: float,
              hi: float, width: int = 96, height: int = 14) -> str:
    """A small inline interval bar for a table cell, on the shared scale [lo, hi]."""
    if value is None or low is None or high is None:
        return ""
    x = Scale(lo, hi, 4, width - 4)
    cy = height / 2
    return (f'<svg class="bar" width="{width}" height="{height}" viewBox="0 0 {width} '
            f'{height}" role="img" aria-label="95% interval {low:.1f} to {high:.1f}">'
            f'<line x1="4" y1="{_f(cy)}" x2="{width - 4}" y2="{_f(cy)}" stroke="{GRID}"/>'
            f'<path d="M{_f(x(low))} {_f(cy)}H{_f(x(high))}M{_f(x(low))} {_f(cy - 4)}'
            f'V{_f(cy + 4)}M{_f(x(high))} {_f(cy - 4)}V{_f(cy + 4)}" stroke="{colour(0)}" '
            f'stroke-width="1.5" fill="none"/><circle cx="{_f(x(value))}" cy="{_f(cy)}" '
            f'r="3" fill="{colour(0)}"/></svg>')
