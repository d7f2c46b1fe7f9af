"""trafilatura's content extraction (`extract_content`) with its element filters matched in Python.

trafilatura finds the main content and prunes boilerplate with XPath expressions that test an
element's tag and then its `class`, `id`, `style`... attributes against up to 90 `contains()` and
`starts-with()` clauses. libxml2 evaluates every clause as a function call on every element; on the
crawl pages refinery's extractor doubts, these XPath calls were about a third of the fallback's CPU
(BENCHMARKS.md, "trafilatura's XPath filters in Python"). Each such expression is compiled
here, from trafilatura's own XPath text, into a Python test (the same clauses: substring, prefix,
equality and presence checks on the same attributes, `translate()` applied as written) run over
`iterdescendants` in document order, so it returns the same elements in the same order.

The functions are trafilatura's own code objects, bound to a copy of their module's globals in
which the expression lists are replaced: nothing in trafilatura is patched, and
`trafilatura.extract` elsewhere in the process is untouched. An expression whose text does not
have the expected form keeps its XPath; tests/test_trafilatura_steps.py checks, on real pages,
that every compiled expression selects exactly what its XPath selects and that the extracted texts
are trafilatura's.
"""
from __future__ import annotations

import re
import types

_STR = r"""(?:"([^"]*)"|'([^']*)')"""
_ATTR = r"@([\w-]+)"
# One clause of the predicate, and the `or` after it (or the end).
_CLAUSE = re.compile(
    r"\s*(?:(contains|starts-with)\(\s*(?:" + _ATTR + r"|translate\(\s*" + _ATTR + r"\s*,\s*" + _STR
    + r"\s*,\s*" + _STR + r"\s*\))\s*,\s*" + _STR + r"\s*\)"
    r"|" + _ATTR + r"\s*=\s*" + _STR + r"|" + _ATTR + r")\s*(or\b|$)", re.S)
# `.//*[(self::a or self::b)][predicate]`, the tag test optional.
_EXPR = re.compile(r"\s*\.//\*(?:\[\(((?:\s*self::\w+\s*(?:or\b)?)+)\)\])?\[(.*)\]\s*$", re.S)
# The content expressions trafilatura takes only the first hit of: `(EXPR)[1]` or `EXPR[1]`, or a
# union of such and `(.//tag)[1]`.
_FIRST = re.compile(r"\s*\((.*)\)\[1\]\s*$|(.*)\[1\]\s*$", re.S)
_FIRST_TAG = re.compile(r"\s*\(\.//(\w+)\)\[1\]\s*$")


def _predicate(src: str):
    """The element test of a predicate made only of or-ed attribute clauses, else None."""
    groups: dict[tuple, tuple] = {}
    pos = 0
    while True:
        c = _CLAUSE.match(src, pos)
        if not c:
            return None
        fn, a1, a2, f1, f2, t1, t2, s1, s2, ea, e1, e2, xa, sep = c.groups()
        if fn:
            table = None
            if a2:
                frm, to = (f1 if f1 is not None else f2), (t1 if t1 is not None else t2)
                if len(frm) != len(to) or len(set(frm)) != len(frm):  # XPath: the first of a repeated char wins
                    return None
                table = str.maketrans(frm, to)
            s = s1 if s1 is not None else s2
            if not s:  # contains(@x, "") is true even without the attribute
                return None
            key = (a1 or a2, None if table is None else tuple(sorted(table.items())))
            g = groups.setdefault(key, (table, [], [], set(), [False]))
            (g[1] if fn == "contains" else g[2]).append(s)
        elif ea:
            groups.setdefault((ea, None), (None, [], [], set(), [False]))[3].add(e1 if e1 is not None else e2)
        else:
            groups.setdefault((xa, None), (None, [], [], set(), [False]))[4][0] = True
        pos = c.end()
        if not sep:
            break
    if pos != len(src):
        return None
    # Every clause is false on a missing attribute, so an element without any of them fails.
    checks = tuple((attr, table, tuple(cont), tuple(starts), frozenset(eq), exists[0])
                   for (attr, _), (table, cont, starts, eq, exists) in groups.items())

    def test(el) -> bool:
        get = el.get
        for attr, table, cont, starts, eq, exists in checks:
            v = get(attr)
            if v is None:
                continue
            if exists or v in eq:
                return True
            if table is not None:
                v = v.translate(table)
            if starts and v.startswith(starts):
                return True
            for s in cont:
                if s in v:
                    return True
        return False
    return test


def _tests(src: str):
    """(tags or None, test) of a `.//*[(self::a or ...)][predicate]` expression, or None."""
    m = _EXPR.match(src)
    if not m or (test := _predicate(m.group(2))) is None:
        return None
    return (tuple(re.findall(r"self::(\w+)", m.group(1))) if m.group(1) else None), test


def _all(src: str):
    """tree -> every descendant the expression selects, in document order; None if not of that form."""
    found = _tests(src)
    if found is None:
        return None
    tags, test = found
    if tags:
        return lambda tree: [e for e in tree.iterdescendants(*tags) if test(e)]
    return lambda tree: [e for e in tree.iterdescendants() if isinstance(e.tag, str) and test(e)]


def _first(src: str):
    """tree -> [the first element in document order] (or []) for trafilatura's content expressions,
    whose first hit alone is used (`_extract` takes `next(...)` of the result), else None.
    `EXPR[1]` is the first match among each parent's children; the first of all of those in
    document order is the first match in the document. A union `(A)[1]|(.//tag)[1]` gives its two
    hits in document order, so its first is the first element that matches A or has that tag."""
    parts = src.split("|")
    alts = []
    for part in parts:
        t = _FIRST_TAG.match(part)
        if t:
            alts.append(((t.group(1),), None))
            continue
        m = _FIRST.match(part)
        inner = m and (m.group(1) if m.group(1) is not None else m.group(2))
        found = inner and _tests(inner)
        if not found:
            return None
        alts.append(found)

    def match(el) -> bool:
        tag = el.tag
        for tags, test in alts:
            if (tags is None or tag in tags) and (test is None or test(el)):
                return True
        return False

    # When every alternative names its tags, lxml skips the other elements without making Python
    # objects for them (document order is kept).
    tags = () if any(t is None for t, _ in alts) else tuple(dict.fromkeys(t for ts, _ in alts for t in ts))

    def run(tree):
        for e in tree.iterdescendants(*tags):
            if isinstance(e.tag, str) and match(e):
                return [e]
        return []
    return run


def compile_all(xpath):
    """A callable selecting what the XPath object selects, or the XPath itself."""
    return _all(xpath.path) or xpath


def compile_first(xpath):
    """A callable giving the first element the XPath object selects (as a list), or the XPath."""
    return _first(xpath.path) or xpath


_DISCARD = ("OVERALL_DISCARD_XPATH", "PAYWALL_DISCARD_XPATH", "DISCARD_IMAGE_ELEMENTS",
            "TEASER_DISCARD_XPATH", "PRECISION_DISCARD_XPATH")
_REBOUND = ("extract_content", "_extract", "recover_wild_text", "prune_unwanted_sections")


def _rebound(module, replaced: dict, functions: tuple[str, ...]) -> dict:
    """A copy of `module`'s globals with `replaced` in it, and its `functions` bound to that copy
    (their code unchanged): the module itself, and every other caller of it, is untouched."""
    namespace = {**vars(module), **replaced}
    for name in functions:
        fn = getattr(module, name)
        new = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
        new.__kwdefaults__ = fn.__kwdefaults__
        namespace[name] = new
    return namespace


def extract_content():
    """trafilatura.main_extractor.extract_content with the filters above. Raises AttributeError
    (or ImportError) when this trafilatura's module does not have the expected names."""
    from trafilatura import main_extractor as m

    replaced = {name: [compile_all(x) for x in getattr(m, name)] for name in _DISCARD}
    replaced["BODY_XPATH"] = [compile_first(x) for x in m.BODY_XPATH]
    return _rebound(m, replaced, _REBOUND)["extract_content"]


def load_html():
    """trafilatura.utils.load_html whose trees use lxml's C-level element classes: trafilatura's
    parser (copied: same options) with `ElementDefaultClassLookup` instead of lxml.html's Python
    `HtmlElementClassLookup.lookup`, which Python calls for every element object created; the
    filters above create one for each element they test. Every element is an `HtmlElement`
    (lxml.html would make form, input, select, textarea and label elements its form classes,
    whose extra methods trafilatura does not use: its cleaning removes those elements)."""
    from lxml.etree import ElementDefaultClassLookup
    from lxml.html import HtmlComment, HtmlElement, HtmlEntity, HtmlProcessingInstruction
    from trafilatura import utils as u

    parser = u.HTML_PARSER.copy()
    parser.set_element_class_lookup(ElementDefaultClassLookup(
        element=HtmlElement, comment=HtmlComment, pi=HtmlProcessingInstruction, entity=HtmlEntity))
    return _rebound(u, {"HTML_PARSER": parser}, ("load_html", "fromstring_bytes"))["load_html"]


def justext_stoplist(x):
    """trafilatura's all-language justext stoplist as a frozenset instead of its tuple. justext's
    `classify_paragraphs` looks the stoplist up in an lru_cache (`define_stoplist`), which hashes
    its argument on every call: a tuple of 154,484 words is hashed anew each time (14 ms, more than
    the rest of justext on a short page), a frozenset's hash is computed once and kept. The words,
    and so every paragraph's class, are the same."""
    stoplist = x.JT_STOPLIST or x.jt_stoplist_init()
    return stoplist if isinstance(stoplist, frozenset) else frozenset(stoplist)


def compare_extraction():
    """(compare_extraction, justext_rescue) of trafilatura.external with the same filters in
    Python (its paywall, boilerplate and comment-section expressions)."""
    from trafilatura import external as x

    replaced = {name: [compile_all(e) for e in getattr(x, name)]
                for name in ("PAYWALL_DISCARD_XPATH", "OVERALL_DISCARD_XPATH", "REMOVE_COMMENTS_XPATH")}
    replaced["JT_STOPLIST"] = justext_stoplist(x)
    namespace = _rebound(x, replaced, ("compare_extraction", "justext_rescue", "try_justext"))
    return namespace["compare_extraction"], namespace["justext_rescue"]
