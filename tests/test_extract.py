"""HTML → main-content text: both extractors, the post-processing, and a real-data F1 floor."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from pipeline.sources.extract import (
    Extractor, ExtractorConfig, ResiliparseOptions, doubts, edge_trim, filter_blocks, filter_stray_lines, tidy,
)

PAGE = """<html><head><title>Shop</title><script>var x = 1;</script><style>p{color:red}</style></head>
<body>
<header><nav><ul><li><a href="/">Start</a></li><li><a href="/news">Nachrichten</a></li></ul></nav></header>
<main><article>
<h1>Neue Brücke über die Isar eröffnet</h1>
<p>Nach drei Jahren Bauzeit ist die neue Fußgängerbrücke über die Isar am Montag eröffnet worden.
Hunderte Münchnerinnen und Münchner kamen zur Einweihung und überquerten den Fluss zum ersten Mal.</p>
<p>Die Stadt hatte das Projekt 2021 beschlossen; die Kosten lagen am Ende bei zwölf Millionen Euro,
etwas mehr als ursprünglich geplant.</p>
<div class="author-box">Über den Autor: Max Mustermann schreibt seit 2010 für uns.</div>
</article></main>
<aside><h3>Das könnte Sie auch interessieren</h3><a href="/x">Andere Geschichte</a></aside>
<div class="cookie-banner">Wir verwenden Cookies, um Ihnen das beste Erlebnis zu bieten.</div>
<footer><a href="/impressum">Impressum</a> <a href="/datenschutz">Datenschutz</a></footer>
</body></html>"""


@pytest.mark.parametrize("name", ["resiliparse", "trafilatura"])
def test_main_content_without_boilerplate(name):
    text = Extractor(ExtractorConfig(name=name))(PAGE)
    assert "Nach drei Jahren Bauzeit" in text and "zwölf Millionen Euro" in text
    for boiler in ("Impressum", "Datenschutz", "Nachrichten", "var x", "color:red", "Cookies"):
        assert boiler not in text, (name, boiler)


def test_default_is_resiliparse_with_boilerplate_selectors():
    ex = Extractor()
    assert ex.name == "resiliparse"
    text = ex(PAGE)
    assert "Über den Autor" not in text  # author box removed by the selectors
    raw = Extractor(ExtractorConfig(resiliparse=ResiliparseOptions(
        skip_elements=[], edge_trim_words=0, block_filter=False)))(PAGE)
    assert "Über den Autor" in raw  # ...which plain resiliparse keeps


@pytest.mark.parametrize("html", ["", "<", "<html><body></body></html>", "\x00\x01 garbage <<>>", "<p>" * 5000])
@pytest.mark.parametrize("name", ["resiliparse", "trafilatura"])
def test_never_raises(name, html):
    out = Extractor(ExtractorConfig(name=name))(html)
    assert out is None or isinstance(out, str)


def test_edge_trim():
    text = ("Home\nMenu\n\nA real sentence with enough words to survive the trim, at the start.\n"
            "Short heading\nA middle line.\nThe last real sentence of the article, long enough to stay in the text.\n"
            "Read more:\nShare this.\nTwitter")
    assert edge_trim(text, 12) == (
        "A real sentence with enough words to survive the trim, at the start.\n"
        "Short heading\nA middle line.\nThe last real sentence of the article, long enough to stay in the text.")
    assert edge_trim(text, 0) == text
    only_short = "Apple\nBanana\nCherry"
    assert edge_trim(only_short, 12) == only_short  # never empties a page: later stages decide


def test_block_filter():
    html = ('<p>A paragraph with <a href="/x">one link</a> in a long sentence of real text.</p>\n'
            '<ul><li><a href="/a">Related story</a></li><li>Plain item text</li></ul>\n'
            '<p><a href="/b">Teaser link one</a> <a href="/c">Teaser two</a></p>\n'
            'Publicidad\n<h2>Heading &amp; more</h2>\n<pre>x  =  1\n  y</pre>')
    out = filter_blocks(html, 0.5, 5)
    assert out == ("A paragraph with one link in a long sentence of real text.\n\n"
                   "• Plain item text\n\nHeading & more\n\nx  =  1\n  y")


def test_tidy():
    assert tidy("a  \n\n\n\n b \t\nc") == "a\n\n b\nc"
    assert tidy("a\t\nb") == "a\nb" and tidy("a \nb") == "a\nb"  # each fix alone
    assert tidy("  a\n\nb  ") == "a\n\nb"  # nothing to fix inside: only the ends are stripped
    assert tidy("a\n\n\nb") == "a\n\nb"


def test_tidy_trims_trailing_spaces_as_the_plain_pattern_does():
    """The trailing-space pattern starts only at the start of a run of spaces (a long run not
    followed by a newline cost time quadratic in its length): the same text on random mixes."""
    import random
    import re

    plain = re.compile(r"[ \t]+\n")
    rng = random.Random(2)
    for _ in range(3000):
        text = "".join(rng.choice(" \t\nab") for _ in range(rng.randint(0, 40))) + " \n"
        assert tidy(text) == re.sub(r"\n{3,}", "\n\n", plain.sub("\n", text)).strip()
    assert tidy(" " * 200_000 + "x \n" + "y") == "x\ny"


def test_plain_text_without_markup_or_entities_passes_the_block_filter_unchanged():
    assert filter_blocks("<p>Fish &amp; chips, &lt;b&gt; is not a tag.</p>", 0.5, 5) == "Fish & chips, <b> is not a tag."
    assert filter_blocks("<p>No markup at all in this sentence.</p>", 0.5, 5) == "No markup at all in this sentence."


def test_the_fallback_doubts_short_texts_and_optionally_only_those_the_fast_path_mostly_threw_away():
    c = ExtractorConfig()  # the default: every text under 800 chars
    assert doubts(None, 0, c) and doubts("", 0, c)  # failed or empty: always
    assert doubts("x" * 500, 600, c) and doubts("x" * 799, 800, c)
    assert not doubts("x" * 800, 10_000, c)  # long enough: never
    kept = ExtractorConfig(fallback_max_kept=0.55)  # the measured alternative (docs/sources.md)
    assert doubts("x" * 199, 210, kept)  # very short: always, even when it is all resiliparse found
    assert not doubts("x" * 500, 600, kept)  # short, but most of what resiliparse found: a short page
    assert doubts("x" * 500, 2000, kept)  # short, and the block filter dropped three quarters: doubted
    assert not doubts("x" * 800, 10_000, kept)
    with pytest.raises(ValidationError):
        ExtractorConfig(fallback_max_kept=1.5)


def test_the_fallback_is_used_only_when_the_fast_path_doubts_the_page():
    # resiliparse's main-content heuristic finds a short text here; trafilatura finds more. With
    # the threshold at 0 nothing is doubted, and the fast path's text stays.
    link_page = ("<html><body><main>" + "".join(f'<p><a href="/{i}">Link number {i} to another page</a></p>'
                                                for i in range(40))
                 + "<p>One short sentence of text.</p></main></body></html>")
    never = Extractor(ExtractorConfig(fallback_below_chars=0, fallback_always_below_chars=0, time_limit=0))
    always = Extractor(ExtractorConfig(fallback_below_chars=10_000, fallback_max_kept=1.0, time_limit=0))
    assert never.extract(link_page)[1] == "resiliparse"
    text, used = always.extract(link_page)
    assert used == "trafilatura (fallback)" and "Link number 7" in text


def _library_trafilatura(html):
    import trafilatura

    return trafilatura.extract(html, favor_precision=False, include_comments=False, include_tables=True,
                               deduplicate=False)


def test_the_fallback_with_readability_on_every_page_is_trafilatura_extract():
    """The fallback runs trafilatura's own steps; with its readability comparison always on it must
    give exactly what trafilatura.extract gives (a trafilatura whose steps moved shows up here)."""
    from pipeline.sources.extract import _trafilatura_fallback

    full = _trafilatura_fallback(10**9)
    short = "<html><body><div><a href='/a'>Home</a></div><p>Ein kurzer Satz.</p></body></html>"
    for html in (PAGE, short, _deep_page(50), "<<<>>>", "<html><body></body></html>"):
        assert full(html) == _library_trafilatura(html), html[:60]


@pytest.mark.slow
def test_the_fallback_with_readability_on_every_page_is_trafilatura_extract_on_real_pages(corpora):
    from benchmarks.extraction import load_pages
    from pipeline.sources.extract import _trafilatura_fallback

    full = _trafilatura_fallback(10**9)
    pages = load_pages(corpora / "web" / "trafilatura_eval_html_benchmark.tar.zst", 60)
    assert [full(h) for h, _ in pages] == [_library_trafilatura(h) for h, _ in pages]


def test_the_fallback_runs_readability_only_when_trafilaturas_own_text_is_short(monkeypatch):
    from trafilatura import external

    from pipeline.sources.extract import _trafilatura_fallback

    long_page = PAGE.replace("<p>Die Stadt", "<p>" + "Ein langer Satz über die Brücke und die Stadt. " * 30
                             + "</p><p>Die Stadt")
    expected = _library_trafilatura(long_page)
    assert len(expected) > 1500 and len(_library_trafilatura(PAGE)) < 800
    calls = []
    real = external.try_readability
    monkeypatch.setattr(external, "try_readability", lambda tree: calls.append(1) or real(tree))
    gated = _trafilatura_fallback(800)
    assert gated(long_page) == expected and calls == []  # long own text: skipped, same text here
    gated(PAGE)
    assert calls == [1]  # short own text: trafilatura's comparison as usual
    with pytest.raises(ValidationError):
        ExtractorConfig(fallback_readability_below_chars=-1)


def test_filter_stray_lines_drops_menu_lines_and_keeps_sentences():
    long = "We are a club for walkers and climbers in London, with trips every month."
    text = f"Home\nProducts\nAbout us\n{long}\nShort but a sentence.\n{long}\nJoin us\nContact\n© 2017 Club"
    assert filter_stray_lines(text, ResiliparseOptions()) == f"{long}\nShort but a sentence.\n{long}"
    # a short last sentence goes with the edge trim, as in the fast path
    assert filter_stray_lines(f"{long}\nShort but a sentence.", ResiliparseOptions()) == long
    # the edge trim runs after: a short sentence alone at the start is kept, at the end it goes as the fast path's
    assert filter_stray_lines("Hallo.\n" + "Ein Satz mit genau sechs Wörtern hier.", ResiliparseOptions(
        edge_trim_words=0)) == "Hallo.\nEin Satz mit genau sechs Wörtern hier."
    assert filter_stray_lines("Home\nLogin\n", ResiliparseOptions()) == ""
    assert filter_stray_lines("Home\nLogin", ResiliparseOptions(bare_min_words=1)) == "Home\nLogin"


# trafilatura's own extraction finds under 250 characters here, so it falls back to its baseline:
# the page's whole text, menu included.
MENU_PAGE = ("<html><body><ul>" + "".join(f"<li><span>Menu {i}</span></li>" for i in range(12)) + "</ul>"
             "<span>We are a club for walkers and climbers in London, and we run trips every month of the year.</span>"
             "<div>Contact</div><div>Log in</div></body></html>")


def test_the_fallbacks_baseline_whole_filtered_or_off():
    from pipeline.sources.extract import _trafilatura_fallback

    sentence = "We are a club for walkers and climbers in London, and we run trips every month of the year."
    whole = _trafilatura_fallback(800, "whole")(MENU_PAGE)
    assert whole == _library_trafilatura(MENU_PAGE)  # trafilatura's own steps, baseline as it runs it
    assert "Menu 7" in whole and "Log in" in whole and sentence in whole
    assert _trafilatura_fallback(800, "filtered", ResiliparseOptions())(MENU_PAGE) == sentence
    off = _trafilatura_fallback(800, "off")(MENU_PAGE)  # trafilatura's own short text, not its baseline
    assert off != whole and off.startswith("- Menu 0")
    with pytest.raises(ValidationError):
        ExtractorConfig(fallback_baseline="yes")


def test_config_is_strict():
    with pytest.raises(ValidationError):
        ExtractorConfig(name="readability")
    with pytest.raises(ValidationError):
        ResiliparseOptions(main_contnet=True)


@pytest.mark.slow
def test_real_pages_f1_floor(corpora):
    """On the first 150 pages of trafilatura's benchmark the default keeps its measured quality
    (full-set numbers in docs/sources.md)."""
    from benchmarks.extraction import load_pages, score

    pages = load_pages(corpora / "web" / "trafilatura_eval_html_benchmark.tar.zst", 150)
    ex = Extractor()
    tp = fn = fp = 0
    for html, item in pages:
        a, b, c, _ = score(ex(html), item)
        tp, fn, fp = tp + a, fn + b, fp + c
    p, r = tp / (tp + fp), tp / (tp + fn)
    assert 2 * p * r / (p + r) >= 0.85, (p, r)


@pytest.mark.parametrize("name", ["resiliparse", "trafilatura"])
def test_a_page_extracts_the_same_whatever_was_extracted_before(name):
    """Same answer for any number of workers: no cache carried from one page to the next."""
    other = PAGE.replace("Neue Brücke über die Isar eröffnet", "Eine andere Meldung")
    first = Extractor(ExtractorConfig(name=name))(PAGE)
    warm = Extractor(ExtractorConfig(name=name))
    for _ in range(3):
        warm(other)
    assert warm(PAGE) == first


def _deep_page(depth: int) -> str:
    return "<html><body>" + "<div>x " * depth + "</div>" * depth + "</body></html>"


@pytest.mark.slow
def test_a_page_over_the_time_limit_is_stopped_and_the_next_page_extracted():
    """100,000 nested divs make resiliparse's DOM walk run for minutes; the limit stops it."""
    from pipeline.sources.sandbox import SandboxTimeout

    ex = Extractor(ExtractorConfig(time_limit=5.0))
    try:
        with pytest.raises(SandboxTimeout):
            ex(_deep_page(100_000))
        assert "Nach drei Jahren Bauzeit" in ex(PAGE)
    finally:
        ex.close()


@pytest.mark.parametrize("time_limit", [0, 30])
def test_an_undecoded_page_extracts_as_its_decoded_text(time_limit):
    """extract_payload decodes in the extraction process exactly as encoding.decode_html does."""
    from pipeline.sources.encoding import decode_html

    ex = Extractor(ExtractorConfig(time_limit=time_limit))
    ru = PAGE.replace("Nach drei Jahren Bauzeit", "Пожарная безопасность")
    pages = [(PAGE.encode("utf-8"), "utf-8"), (PAGE.encode("cp1252"), None),
             (ru.encode("cp1251", "xmlcharrefreplace"), "windows-1251"),
             (ru.encode("cp1251", "xmlcharrefreplace"), "utf-8"),  # a wrong header
             (b"\xef\xbb\xbf" + PAGE.encode(), None), (b"", None), (b"\xff\xfe\x00<p>", "utf-8")]
    try:
        for payload, charset in pages:
            d = decode_html(payload, charset)
            text, used = ex.extract(d.text)
            assert ex.extract_payload(payload, charset) == (text, used, (d.charset, d.charset_source, d.replaced))
    finally:
        ex.close()


def test_sandboxed_and_in_process_extraction_agree():
    inproc = Extractor(ExtractorConfig(time_limit=0))
    boxed = Extractor(ExtractorConfig(time_limit=30))
    try:
        for html in (PAGE, _deep_page(50), "<p>x</p>", "<<<>>>"):
            assert boxed(html) == inproc(html)
    finally:
        boxed.close()


def test_a_post_the_extractor_writes_twice_is_kept_once(corpora):
    """trafilatura writes the posts of katzen-forum.net's page twice (as trafilatura.extract does);
    the page holds them once, so refinery's output holds them once. A paragraph the page repeats
    keeps its copies."""
    import collections
    import tarfile

    import zstandard

    from pipeline import api
    from pipeline.sources.extract import drop_invented_repeats

    path = corpora / "web" / "trafilatura_eval_html_benchmark.tar.zst"
    with open(path, "rb") as fh, zstandard.ZstdDecompressor().stream_reader(fh) as raw, \
            tarfile.open(fileobj=raw, mode="r|") as tar:
        page = next(tar.extractfile(m).read() for m in tar if m.name.endswith("katzen-forum.net-Pepe.html"))
    text = api.extract(page, name="trafilatura").text
    paras = collections.Counter(p for p in text.split("\n") if len(p) >= 80)
    assert "Wenn ich Pepe abends anschauen" in text
    assert paras[next(p for p in paras if p.startswith("Wenn ich Pepe abends anschauen"))] == 1
    twice = "A sentence the page itself repeats, long enough to count as a paragraph of its own text."
    html = f"<p>{twice}</p><p>other</p><p>{twice}</p>"
    assert drop_invented_repeats(f"{twice}\nother\n{twice}", html) == f"{twice}\nother\n{twice}"
    assert drop_invented_repeats(f"{twice}\n{twice}", f"<p>{twice}</p>") == twice
