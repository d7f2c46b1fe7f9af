import xml.etree.ElementTree as ET

import numpy as np
import pytest

from pipeline.report.charts import grouped_bars, nice_ticks, signal_histogram

NS = "{http://www.w3.org/2000/svg}"


def bars(svg: bytes) -> list[dict]:
    root = ET.fromstring(svg)
    return [r.attrib for r in root.iter(NS + "rect") if r.get("fill") != "white" and r.get("width") != "10"]


def test_histogram_is_svg_with_stacked_bars_per_series():
    kept = np.array([0.1, 0.1, 0.5, 0.9])
    rejected = np.array([0.1, 0.2])
    svg = signal_histogram("lang_score <x>", [("kept", kept), ("rejected at langid", rejected),
                                              ("rejected later", np.empty(0))],
                           [("langid.min_score = 0.65", 0.65)], log_y=False)
    root = ET.fromstring(svg)  # well-formed XML, names escaped
    texts = [t.text for t in root.iter(NS + "text")]
    assert "lang_score <x>" in texts and "langid.min_score = 0.65" in texts
    assert {"kept", "rejected at langid", "rejected later"} <= set(texts)
    drawn = bars(svg)
    by_color = {}
    for b in drawn:
        by_color.setdefault(b["fill"], []).append(b)
    assert len(by_color["#4c72b0"]) == 3  # kept: 3 non-empty bins (0.1 twice, 0.5, 0.9)
    assert len(by_color["#dd8452"]) == 2  # rejected: 0.1 (stacked on kept), 0.2
    assert "#bbbbbb" not in by_color  # empty series draws nothing
    # the rejected bar at 0.1 sits on top of the kept bar of the same bin, which is 2 documents high
    kept01 = min(by_color["#4c72b0"], key=lambda b: float(b["x"]))
    rej01 = min(by_color["#dd8452"], key=lambda b: float(b["x"]))
    assert kept01["x"] == rej01["x"]
    assert float(rej01["y"]) + float(rej01["height"]) == approx(float(kept01["y"]))
    assert float(kept01["height"]) == approx(2 * float(rej01["height"]))


def test_integer_signal_and_log_scale_and_empty_input():
    svg = signal_histogram("dup_cluster_size", [("kept", np.array([1, 1, 1, 2, 50]))], [], log_y=True)
    ET.fromstring(svg)
    assert len(bars(svg)) == 3  # one bin per integer value present
    ET.fromstring(signal_histogram("empty", [("kept", np.empty(0))], [], log_y=False))


def approx(v):
    return pytest.approx(v, abs=0.11)  # coordinates are written with one decimal


def test_nice_ticks():
    assert nice_ticks(0, 110) == [0, 25, 50, 75, 100]
    assert nice_ticks(0.13, 0.97) == [0.2, 0.4, 0.6, 0.8]
    assert nice_ticks(0, 7, integer=True) == [0, 2, 4, 6]
    assert nice_ticks(3, 3) == [3]


def test_grouped_bars_one_bar_per_category_and_series_with_value_labels():
    svg = grouped_bars("Funnel", ["read", "langid", "dedup"],
                       {"documents": [100.0, 40.0, 30.0], "bytes": [100.0, 50.0, 20.0]},
                       "% of read input left after stage", ymax=110.0, value_labels="{:.1f}%")
    root = ET.fromstring(svg)
    drawn = bars(svg)
    assert len(drawn) == 6
    docs = [float(b["height"]) for b in sorted(drawn, key=lambda b: float(b["x"])) if b["fill"] == "#4c72b0"]
    assert docs[1] / docs[0] == pytest.approx(0.4, abs=0.01) and docs[2] / docs[0] == pytest.approx(0.3, abs=0.01)
    texts = [t.text for t in root.iter(NS + "text")]
    assert {"40.0%", "20.0%", "read", "dedup", "documents", "bytes", "Funnel"} <= set(texts)
    one = ET.fromstring(grouped_bars("Per source", ["read"], {"web": [2.0]}, "text MB"))  # one series: no legend
    assert "web" not in [t.text for t in one.iter(NS + "text")]
