"""The report's charts, as PNG bytes (matplotlib, Agg backend: no display needed)."""
from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

_DPI = 100


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=_DPI, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def funnel_chart(stages: list[str], remaining: dict[str, list[float]]) -> bytes:
    """Grouped bars: % of the read input left after each stage, for each quantity."""
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(stages) + 2), 4))
    x = np.arange(len(stages))
    width = 0.8 / max(1, len(remaining))
    for j, (name, vals) in enumerate(remaining.items()):
        bars = ax.bar(x + (j - (len(remaining) - 1) / 2) * width, vals, width, label=name)
        for b, v in zip(bars, vals):
            ax.annotate(f"{v:.1f}%", (b.get_x() + b.get_width() / 2, b.get_height()), ha="center",
                        va="bottom", fontsize=7)
    ax.set_xticks(x, stages, rotation=20, ha="right")
    ax.set_ylabel("% of read input left after stage")
    ax.set_ylim(0, 110)
    ax.set_title("Funnel")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=len(remaining), frameon=False)
    return _png(fig)


def source_chart(stages: list[str], kept_bytes: dict[str, list[float]]) -> bytes:
    """Grouped bars: text MB left after each stage, one bar per source."""
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(stages) + 2), 4))
    x = np.arange(len(stages))
    width = 0.8 / max(1, len(kept_bytes))
    for j, (src, vals) in enumerate(sorted(kept_bytes.items())):
        ax.bar(x + (j - (len(kept_bytes) - 1) / 2) * width, np.array(vals) / 1e6, width, label=src)
    ax.set_xticks(x, stages, rotation=20, ha="right")
    ax.set_ylabel("text MB left after stage")
    ax.set_title("Per source")
    ax.legend()
    return _png(fig)


def signal_histogram(name: str, series: list[tuple[str, np.ndarray]],
                     thresholds: list[tuple[str, float]], log_y: bool) -> bytes:
    """Stacked histogram of a signal (e.g. kept / rejected by its stage / rejected later) with the
    recipe's thresholds."""
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    both = np.concatenate([v for _, v in series])
    lo, hi = (float(both.min()), float(both.max())) if len(both) else (0.0, 1.0)
    for _, t in thresholds:
        lo, hi = min(lo, t), max(hi, t)
    if hi == lo:
        hi = lo + 1
    integer = len(both) and np.all(np.mod(both, 1) == 0) and hi - lo <= 60
    bins = np.arange(lo - 0.5, hi + 1.5) if integer else np.linspace(lo, hi, 41)
    colors = ["#4c72b0", "#dd8452", "#bbbbbb"][: len(series)]
    ax.hist([v for _, v in series], bins=bins, stacked=True, label=[n for n, _ in series], color=colors)
    for label, t in thresholds:
        ax.axvline(t, color="#c00", linestyle="--", linewidth=1.2)
        ax.annotate(label, (t, 1), xycoords=("data", "axes fraction"), rotation=90, va="top", ha="right",
                    fontsize=7, color="#c00")
    if log_y:
        ax.set_yscale("log")
    ax.set_title(name)
    ax.set_ylabel("documents (sample)")
    ax.legend(fontsize=8)
    return _png(fig)


def language_chart(examined: list[tuple[str, int]], kept: dict[str, int]) -> bytes:
    """Bars per language: documents language ID examined, and how many of them were kept."""
    fig, ax = plt.subplots(figsize=(max(6, 0.35 * len(examined) + 2), 3.6))
    x = np.arange(len(examined))
    ax.bar(x - 0.2, [n for _, n in examined], 0.4, label="examined")
    ax.bar(x + 0.2, [kept.get(lang, 0) for lang, _ in examined], 0.4, label="kept")
    ax.set_xticks(x, [lang for lang, _ in examined], rotation=60)
    ax.set_ylabel("documents")
    ax.set_title("Languages")
    ax.legend(fontsize=8)
    return _png(fig)
