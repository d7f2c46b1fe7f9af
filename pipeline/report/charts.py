"""The report's charts, written as SVG.

Why SVG written here rather than matplotlib: a report has dozens of charts (one histogram per
signal), and matplotlib's layout pass cost ~0.2 s per figure, which made the report a fifth of the
wall time of a 50 MB run. These charts are bars and a few lines; SVG also stays sharp when zoomed.
"""
from __future__ import annotations

import math

import numpy as np

COLORS = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c"]
HIST_COLORS = ["#4c72b0", "#dd8452", "#bbbbbb"]  # kept, rejected at the signal's stage, rejected later


def nice_ticks(lo: float, hi: float, n: int = 5, integer: bool = False) -> list[float]:
    """About `n` round tick values (1, 2, 2.5 or 5 times a power of ten) covering [lo, hi]."""
    if not math.isfinite(lo) or not math.isfinite(hi) or hi <= lo:
        return [lo]
    raw = (hi - lo) / max(n, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    if integer:
        step = max(1.0, round(step))
    first = math.ceil(lo / step - 1e-9) * step
    ticks, k = [], 0
    while first + k * step <= hi + step * 1e-9:
        ticks.append(round(first + k * step, 12))
        k += 1
    return ticks


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _num(v: float) -> str:
    return f"{v:,.4g}" if abs(v) < 1e6 else f"{v:.3g}"


class Plot:
    """One SVG chart: a plot area with data coordinates, axes, ticks, a title and a legend."""

    def __init__(self, title: str, xlim: tuple[float, float], ylim: tuple[float, float], *, width: int = 650,
                 height: int = 340, log_y: bool = False, bottom: int = 42, ylabel: str = ""):
        self.left, self.top = 66, 30  # margins for the y labels and the title; 16 px on the right
        self.pw, self.ph = width - self.left - 16, height - self.top - bottom
        self.xlim, self.ylim, self.log_y = xlim, ylim, log_y
        self.out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
                    f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Arial, sans-serif" font-size="10">',
                    f'<rect width="{width}" height="{height}" fill="white"/>',
                    f'<text x="{self.left + self.pw / 2:.1f}" y="18" text-anchor="middle" font-size="12">'
                    f'{_esc(title)}</text>']
        if ylabel:
            self.out.append(f'<text transform="translate(14,{self.top + self.ph / 2:.1f}) rotate(-90)" '
                            f'text-anchor="middle">{_esc(ylabel)}</text>')

    def x(self, v: float) -> float:
        a, b = self.xlim
        return self.left + self.pw * (v - a) / (b - a)

    def y(self, v: float) -> float:
        a, b = self.ylim
        if self.log_y:
            v = max(v, a)
            a, b, v = math.log10(a), math.log10(b), math.log10(v)
        return self.top + self.ph * (1 - (v - a) / (b - a))

    def bar(self, x0: float, x1: float, y0: float, y1: float, color: str) -> None:
        """A bar in data coordinates, from y0 (its base) up to y1."""
        left, top, base = self.x(x0), self.y(y1), self.y(y0)
        self.out.append(f'<rect x="{left:.1f}" y="{top:.1f}" width="{max(self.x(x1) - left, 0.5):.1f}" '
                        f'height="{max(base - top, 0.5):.1f}" fill="{color}"/>')

    def label(self, x: float, y: float, text: str, size: int = 7) -> None:
        """A small label centred above the data point (x, y)."""
        self.out.append(f'<text x="{self.x(x):.1f}" y="{self.y(y) - 2:.1f}" text-anchor="middle" '
                        f'font-size="{size}">{_esc(text)}</text>')

    def vline(self, x: float, text: str) -> None:
        """A dashed threshold line with its name along it."""
        px = self.x(x)
        self.out.append(f'<path d="M{px:.1f},{self.top}V{self.top + self.ph}" stroke="#c00" stroke-width="1.2" '
                        f'stroke-dasharray="5,3"/><text transform="translate({px - 3:.1f},{self.top + 4}) rotate(-90)" '
                        f'text-anchor="end" font-size="8" fill="#c00">{_esc(text)}</text>')

    def axes(self, xticks: list[tuple[float, str]], yticks: list[float], rotate: int = 0) -> None:
        t, b = self.top, self.top + self.ph
        self.out.append(f'<path d="M{self.left},{t}V{b}H{self.left + self.pw}" fill="none" stroke="#333"/>')
        for v, text in xticks:
            px = self.x(v)
            anchor = "end" if rotate else "middle"
            turn = f' transform="rotate(-{rotate},{px:.1f},{b + 14})"' if rotate else ""
            self.out.append(f'<path d="M{px:.1f},{b}v4" stroke="#333"/><text x="{px:.1f}" y="{b + 14}" '
                            f'text-anchor="{anchor}"{turn}>{_esc(text)}</text>')
        for v in yticks:
            py = self.y(v)
            self.out.append(f'<path d="M{self.left},{py:.1f}h-4" stroke="#333"/><text x="{self.left - 6}" '
                            f'y="{py + 3.5:.1f}" text-anchor="end">{_num(v)}</text>')

    def legend(self, items: list[tuple[str, str]]) -> None:
        width = 24 + 6 * max((len(t) for t, _ in items), default=0)
        for j, (text, color) in enumerate(items):
            y = self.top + 6 + 14 * j
            x = self.left + self.pw - width
            self.out.append(f'<rect x="{x}" y="{y}" width="10" height="10" fill="{color}"/>'
                            f'<text x="{x + 14}" y="{y + 9}">{_esc(text)}</text>')

    def svg(self) -> bytes:
        return ("\n".join(self.out) + "\n</svg>\n").encode("utf-8")


def grouped_bars(title: str, categories: list[str], series: dict[str, list[float]], ylabel: str, *,
                 ymax: float | None = None, value_labels: str | None = None, rotate: int = 20) -> bytes:
    """Bars per category, one per series side by side. `value_labels` formats a label above each bar."""
    names = list(series)
    top = ymax if ymax is not None else max([v for vals in series.values() for v in vals] + [0.0]) * 1.1 or 1.0
    width = max(560, min(1100, 34 * len(categories) * max(1, len(names)) + 140))
    plot = Plot(title, (-0.5, len(categories) - 0.5), (0.0, top), width=width, height=380 if rotate else 340,
                bottom=90 if rotate else 42, ylabel=ylabel)
    bw = 0.8 / max(1, len(names))
    for j, name in enumerate(names):
        color = COLORS[j % len(COLORS)]
        for i, v in enumerate(series[name]):
            x0 = i - 0.4 + j * bw
            plot.bar(x0, x0 + bw, 0.0, v, color)
            if value_labels:
                plot.label(x0 + bw / 2, v, value_labels.format(v))
    plot.axes([(i, c) for i, c in enumerate(categories)], [t for t in nice_ticks(0, top) if t <= top], rotate)
    if len(names) > 1:
        plot.legend([(n, COLORS[j % len(COLORS)]) for j, n in enumerate(names)])
    return plot.svg()


def signal_histogram(name: str, series: list[tuple[str, np.ndarray]],
                     thresholds: list[tuple[str, float]], log_y: bool, colors: list[str] | None = None) -> bytes:
    """Stacked histogram of a signal (e.g. kept / rejected by its stage / rejected later), one
    colour per series (`colors`, default HIST_COLORS), with the recipe's thresholds."""
    colors = list(colors or HIST_COLORS)
    both = np.concatenate([v for _, v in series])
    lo, hi = (float(both.min()), float(both.max())) if len(both) else (0.0, 1.0)
    for _, t in thresholds:
        lo, hi = min(lo, t), max(hi, t)
    if hi == lo:
        hi = lo + 1
    integer = bool(len(both) and np.all(np.mod(both, 1) == 0) and hi - lo <= 60)
    # a threshold at the edge of the data would sit on the frame: leave room on that side
    pad = 1.0 if integer else (hi - lo) * 0.05
    if any(abs(t - lo) <= pad / 2 for _, t in thresholds):
        lo -= pad
    if any(abs(hi - t) <= pad / 2 for _, t in thresholds):
        hi += pad
    bins = np.arange(lo - 0.5, hi + 1.5) if integer else np.linspace(lo, hi, 41)
    counts = np.array([np.histogram(v, bins=bins)[0] for _, v in series], dtype=float).reshape(len(series), -1)
    tops = counts.cumsum(axis=0)
    ymax = max(1.0, float(tops[-1].max()) if tops.size else 1.0)
    ylim = (0.8, ymax * 1.5) if log_y else (0.0, ymax * 1.05)
    plot = Plot(name, (float(bins[0]), float(bins[-1])), ylim, log_y=log_y,
                ylabel="documents (sample)" + (" (log)" if log_y else ""))
    for j, color in enumerate(colors[: len(series)]):
        base = tops[j - 1] if j else np.zeros(len(bins) - 1)
        for b in np.flatnonzero(counts[j]):
            plot.bar(float(bins[b]), float(bins[b + 1]), float(base[b]), float(tops[j][b]), color)
    if log_y:
        yticks = [10.0 ** k for k in range(0, int(math.log10(ylim[1])) + 1)]
    else:
        yticks = [t for t in nice_ticks(0, ylim[1], integer=True) if t <= ylim[1]]
    xticks = [t for t in nice_ticks(float(bins[0]), float(bins[-1]), 7, integer) if bins[0] <= t <= bins[-1]]
    plot.axes([(t, _num(t)) for t in xticks], yticks)
    for label, t in thresholds:
        plot.vline(t, label)
    plot.legend([(label, color) for (label, _), color in zip(series, colors)])
    return plot.svg()
