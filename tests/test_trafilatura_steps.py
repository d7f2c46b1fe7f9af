"""trafilatura's XPath filters matched in Python select exactly what the XPath selects."""
from __future__ import annotations

import pytest
from lxml.etree import XPath
from lxml.html import fromstring

from pipeline.sources.trafilatura_steps import compile_all, compile_first

trafilatura_xpaths = pytest.importorskip("trafilatura.xpaths")

_ALL = ("OVERALL_DISCARD_XPATH", "PAYWALL_DISCARD_XPATH", "DISCARD_IMAGE_ELEMENTS",
        "TEASER_DISCARD_XPATH", "PRECISION_DISCARD_XPATH", "REMOVE_COMMENTS_XPATH")

TREE = """<html><body>
<div id="Footer-x">a</div><div class="site-Footer">b</div><span class="Related">c</span>
<section class="sharebox">d</section><p class="x share-y">e</p><div role="Navigation">f</div>
<div data-lp-replacement-content="">g</div><div class="post">h<div class="post">i</div></div>
<div class="nothing" id="none">j<!-- a comment --></div><b class="footer">k</b>
<main>l</main><article class="story">m</article><div aria-hidden="true">n</div>
</body></html>"""


def _expressions(names):
    return [(f"{n}[{i}]", x) for n in names for i, x in enumerate(getattr(trafilatura_xpaths, n))]


@pytest.mark.parametrize("label,xpath", _expressions(_ALL))
def test_each_filter_selects_what_its_xpath_selects(label, xpath):
    tree = fromstring(TREE)
    assert compile_all(xpath)(tree) == xpath(tree), label


@pytest.mark.parametrize("label,xpath", _expressions(("BODY_XPATH",)))
def test_each_content_expression_finds_the_first_element_its_xpath_finds(label, xpath):
    tree = fromstring(TREE)
    assert compile_first(xpath)(tree) == xpath(tree)[:1], label


def test_the_filters_trafilatura_spends_its_time_in_are_compiled():
    """A trafilatura whose expressions changed form keeps its XPath (still correct, but slower):
    this names which ones."""
    compiled = [label for label, x in _expressions(_ALL) if compile_all(x) is not x]
    compiled += [label for label, x in _expressions(("BODY_XPATH",)) if compile_first(x) is not x]
    for must in ("OVERALL_DISCARD_XPATH[0]", "OVERALL_DISCARD_XPATH[1]", "PAYWALL_DISCARD_XPATH[0]",
                 "DISCARD_IMAGE_ELEMENTS[0]", "TEASER_DISCARD_XPATH[0]", "BODY_XPATH[0]", "BODY_XPATH[2]",
                 "BODY_XPATH[3]", "BODY_XPATH[4]"):
        assert must in compiled


@pytest.mark.parametrize("src,expected", [
    ('.//*[contains(translate(@id, "F","f"), "footer")]', ["a"]),  # "Footer-x" -> "footer-x"
    ('.//*[(self::div or self::span)][contains(translate(@class, "R", "r"), "related")]', ["c"]),
    ('.//*[starts-with(@class, "shar")]', ["d"]),
    ('.//*[@class="post"]', ["h", "i"]),
    ('.//*[@data-lp-replacement-content]', ["g"]),
    ('.//*[(self::div)][@aria-hidden="true" or contains(@class, "noth")]', ["j", "n"]),
    ('.//*[contains(@class, "footer")]', ["k"]),  # "site-Footer" has a capital F
])
def test_each_kind_of_clause(src, expected):
    tree, x = fromstring(TREE), XPath(src)
    got = compile_all(x)
    assert got is not x
    assert [e.text for e in got(tree)] == expected == [e.text for e in x(tree)]


@pytest.mark.parametrize("src", [
    './/*[contains(@class, "")]',  # true without the attribute: not an attribute test
    './/*[not(@class)]',
    './/*[contains(translate(@id, "AB", "a"), "x")]',  # translate that deletes characters
    './/*[contains(translate(@id, "AA", "ab"), "a")]',  # a repeated character: XPath maps it by its first
    './/div[@class="x"]',
])
def test_an_expression_of_another_form_keeps_its_xpath(src):
    x = XPath(src)
    assert compile_all(x) is x and compile_first(x) is x


@pytest.mark.slow
def test_real_pages_select_the_same_elements(corpora):
    """On real pages, at each point trafilatura applies them (the cleaned tree), every compiled
    expression selects exactly what its XPath does."""
    from trafilatura.htmlprocessing import convert_tags, tree_cleaning
    from trafilatura.settings import DEFAULT_CONFIG
    from trafilatura.settings import Extractor as Options
    from trafilatura.utils import load_html

    from benchmarks.extraction import load_pages

    o = Options(config=DEFAULT_CONFIG, output_format="txt", comments=False, tables=True)
    pages = load_pages(corpora / "web" / "trafilatura_eval_html_benchmark.tar.zst", 120)
    alls = [(x, compile_all(x)) for _, x in _expressions(_ALL)]
    firsts = [(x, compile_first(x)) for _, x in _expressions(("BODY_XPATH",))]
    hits = 0
    for html, _ in pages:
        raw = load_html(html)
        if raw is None:
            continue
        for tree in (raw, convert_tags(tree_cleaning(load_html(html), o), o, None)):
            for x, fast in alls:
                expected = x(tree)
                hits += len(expected)
                assert fast(tree) == expected, x.path[:80]
            for x, fast in firsts:
                assert fast(tree) == x(tree)[:1], x.path[:80]
    assert hits > 1000  # the pages do exercise the filters


def test_extract_content_is_trafilaturas_with_the_filters_replaced():
    from trafilatura import main_extractor

    from pipeline.sources.trafilatura_steps import extract_content

    fast = extract_content()
    assert fast is not main_extractor.extract_content
    assert fast.__code__ is main_extractor.extract_content.__code__
    assert fast.__globals__["extract_content"] is fast
    assert main_extractor.OVERALL_DISCARD_XPATH[0].__class__ is XPath  # trafilatura itself untouched
    assert fast.__globals__["OVERALL_DISCARD_XPATH"][0].__class__ is not XPath


def test_load_html_gives_trafilaturas_tree_with_plain_html_elements():
    from lxml.etree import tostring
    from lxml.html import HtmlElement
    from trafilatura import utils

    from pipeline.sources.trafilatura_steps import load_html

    html = "<html><body><form><input name='q'><label>L</label></form><p class='x'>T</p><!-- c --></body></html>"
    ours, theirs = load_html()(html), utils.load_html(html)
    assert tostring(ours) == tostring(theirs)
    assert {type(e) for e in ours.iter()} == {HtmlElement}
    assert type(theirs.find(".//form")) is not HtmlElement  # lxml.html's form class, untouched
    assert load_html()(ours) is ours


def test_compare_extraction_is_trafilaturas_with_the_filters_replaced():
    from trafilatura import external

    from pipeline.sources.trafilatura_steps import compare_extraction

    compare, rescue = compare_extraction()
    assert compare.__code__ is external.compare_extraction.__code__
    assert rescue.__code__ is external.justext_rescue.__code__
    assert compare.__globals__["justext_rescue"] is rescue
    assert external.PAYWALL_DISCARD_XPATH[0].__class__ is XPath  # trafilatura itself untouched
    assert rescue.__globals__["REMOVE_COMMENTS_XPATH"][0].__class__ is not XPath


@pytest.mark.slow
def test_justext_sees_the_same_stoplist_as_a_frozenset_hashed_once(corpora):
    """justext's lru_cache hashes its stoplist argument on every call: trafilatura's all-language
    tuple (154,484 words) cost ~14 ms per page that reaches justext; the rescue's stoplist is the
    same words as a frozenset (hash kept), and gives every page the paragraphs trafilatura's does."""
    import tarfile

    import zstandard
    from lxml.html import tostring as html_tostring
    from trafilatura import external, utils

    from pipeline.sources.trafilatura_steps import compare_extraction

    _, rescue = compare_extraction()
    ours = rescue.__globals__["try_justext"].__globals__["JT_STOPLIST"]
    theirs = external.JT_STOPLIST or external.jt_stoplist_init()
    assert isinstance(ours, frozenset) and ours == frozenset(theirs)
    assert rescue.__globals__["try_justext"].__code__ is external.try_justext.__code__
    pages = 0
    path = corpora / "web" / "trafilatura_eval_html_benchmark.tar.zst"
    with open(path, "rb") as fh, tarfile.open(fileobj=zstandard.ZstdDecompressor().stream_reader(fh), mode="r|") as tar:
        for member in tar:
            if not member.isfile() or not member.name.endswith(".html") or pages >= 25:
                continue
            html = tar.extractfile(member).read()
            a = rescue.__globals__["try_justext"](utils.load_html(html), None, None)
            b = external.try_justext(utils.load_html(html), None, None)
            assert (a is None) == (b is None)
            if a is not None:
                assert html_tostring(a) == html_tostring(b)
            pages += 1
    assert pages == 25
