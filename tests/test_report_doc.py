import base64

from pipeline.report.doc import Bullets, Doc, Heading, Image, Para, Quote, Table, to_html, to_markdown

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


def sample() -> Doc:
    d = Doc("Run <x>")
    d.add(Heading("Funnel"), Para("a & b"), Bullets(["one", "<two>"]),
          Table(["stage", "docs"], [["read", "1,234"], ["a|b", "98.1%"]], id="funnel", caption="All"),
          Image("funnel.png", PNG, "funnel chart"),
          Quote("[web] http://x/1", "<script>alert(1)</script>\nsecond line"))
    return d


def test_markdown():
    md = to_markdown(sample())
    assert md.startswith("# Run <x>\n")
    assert "| stage | docs |\n|---|---|\n| read | 1,234 |\n| a\\|b | 98.1% |" in md  # pipes escaped in cells
    assert "![funnel chart](funnel.png)" in md and "- <two>" in md
    assert "> &lt;script&gt;alert(1)&lt;/script&gt; second line" in md  # audit text escaped, one line


def test_html_is_self_contained_and_escaped():
    page = to_html(sample())
    assert "<title>Run &lt;x&gt;</title>" in page and "<p>a &amp; b</p>" in page
    assert f'src="data:image/png;base64,{base64.b64encode(PNG).decode()}"' in page
    svg = Doc("t")
    svg.add(Image("h.svg", b"<svg/>", "h"))
    assert f'src="data:image/svg+xml;base64,{base64.b64encode(b"<svg/>").decode()}"' in to_html(svg)
    assert '<table id="funnel"><caption>All</caption>' in page
    assert '<td>read</td><td class="n">1,234</td>' in page  # numbers right-aligned, words not
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert" not in page
    for external in ("http://", "https://", "<link", "@import", "src=\"/"):
        assert external not in page.replace("[web] http://x/1", "")


def test_a_long_report_has_a_table_of_contents_whose_links_land():
    import re

    d = Doc("Run")
    for name in ("Funnel", "Signals", "Yield", "Signals", "Audit"):
        d.add(Heading(name), Para("x"), Heading(f"{name} detail", 3))
    page = to_html(d)
    links = re.findall(r'href="#([^"]+)"', page)
    ids = set(re.findall(r' id="([^"]+)"', page))
    assert 'nav id="toc"' in page and len([a for a in links if a != "toc"]) == 10
    assert all(a in ids for a in links) and "signals-1" in ids  # unique anchors for repeated headings
    md = to_markdown(d)
    assert "- [Funnel](#funnel)" in md and "  - [Yield detail](#yield-detail)" in md


def test_a_threshold_at_the_edge_of_the_data_is_drawn_inside_the_frame():
    import re

    import numpy as np

    from pipeline.report.charts import signal_histogram

    svg = signal_histogram("c4_num_sentences", [("kept", np.linspace(0.5, 5.0, 50))],
                           [("c4.min_num_sentences", 5.0)], log_y=False).decode()
    m = re.search(r'<path d="M([\d.]+),[^"]*" stroke="#c00"', svg)
    left, right = 66, 650 - 16
    x = float(m.group(1))
    assert left + 10 < x < right - 10, x
