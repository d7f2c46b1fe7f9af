"""LaTeX source → the text of the paper, as LaTeX (math kept as written).

What pretraining corpora (RedPajama, Dolma, Proof-Pile) do with arXiv: find the main file,
inline its \\input/\\include files, drop comments, the preamble and the bibliography, and expand
the author's simple macros so `\\R` reads `\\mathbb{R}` everywhere. Pure functions over a
{path: text} map, so the reader handles archives and this module handles LaTeX.
"""
from __future__ import annotations

import bisect
import posixpath
import re
from dataclasses import dataclass, field

_DOCCLASS = re.compile(r"\\document(?:class|style)\b")
_BEGIN_DOC = re.compile(r"\\begin\s*\{document\}")
_END_DOC = re.compile(r"\\end\s*\{document\}")
# \input{x}, \input x, \include{x}, \subfile{x}, \import{dir/}{x}
_INPUT = re.compile(
    r"\\(input|include|subfile|subfileinclude)\s*(?:\{\s*([^{}]+?)\s*\}|\s+([^\s{}\\%]+))"
    r"|\\(?:sub)?(?:import|inputfrom|includefrom)\*?\s*\{\s*([^{}]*?)\s*\}\s*\{\s*([^{}]+?)\s*\}"
)
# Blocks cut from a start to the first end after it (`_cut_blocks`, not `start.*?end`: that regex
# rescans to the end of the text for every start without an end, quadratic on hostile input).
_COMMENT_BEGIN = re.compile(r"\\begin\s*\{comment\}")
_COMMENT_END = re.compile(r"\\end\s*\{comment\}")
_IFFALSE = re.compile(r"\\iffalse\b")
_FI = re.compile(r"\\fi\b")
_THEBIB = re.compile(r"\\begin\s*\{thebibliography\}.*?(?:\\end\s*\{thebibliography\}|$)", re.S)
_BIBCMDS = re.compile(
    r"\\(?:bibliography|bibliographystyle|addbibresource|nobibliography)\s*\{[^{}]*\}"
    r"|\\printbibliography\b(?:\[[^\]]*\])?"
)
_APPENDIX = re.compile(r"\\appendix\b|\\begin\s*\{appendices\}")
_BLANKS = re.compile(r"\n[ \t]*(?:\n[ \t]*){2,}")
_MACRO_NAME = r"\\([A-Za-z@]+)"
_NEWCOMMAND = re.compile(
    r"\\(?:re)?newcommand\*?\s*(?:\{\s*" + _MACRO_NAME + r"\s*\}|" + _MACRO_NAME + r")"
    r"|\\providecommand\*?\s*(?:\{\s*" + _MACRO_NAME + r"\s*\}|" + _MACRO_NAME + r")"
    r"|\\(?:g|e|x)?def\s*" + _MACRO_NAME
)
# Macros we never expand even when redefined: structure the cleaner itself relies on.
_PROTECTED = frozenset({"input", "include", "begin", "end", "appendix", "documentclass", "section",
                        "bibliography", "item", "label", "ref", "cite"})
# Plain-TeX macro packages loaded with \input (not the author's files, so never "missing").
_TEX_PACKAGES = frozenset({"xy", "epsf", "psfig", "epsfig", "amssym", "amssym.def", "amssym.tex", "amstex",
                           "mssymb", "harvmac", "tables", "jnl", "reforder", "eqnorder", "texdraw",
                           "pictex", "mathptmx", "epic", "eepic", "diagrams", "tikz", "pgf"})
MAX_INPUT_DEPTH = 32
MAX_EXPANSIONS = 200_000
MAX_GROWTH = 4  # macro expansion may add at most 4x the text (plus 1 MiB)


@dataclass
class LatexResult:
    text: str | None  # None when there is no usable LaTeX (see `reason`)
    reason: str | None = None  # "no_tex_source" | "no_main_file" | "no_text"
    detail: str = ""
    main_file: str | None = None
    files_used: list[str] = field(default_factory=list)
    missing_inputs: list[str] = field(default_factory=list)
    macros_expanded: int = 0
    appendix_removed: bool = False


# -- comments ----------------------------------------------------------------------------------
def strip_comments(src: str) -> str:
    """Remove % comments (not \\%), whole-line comments with their line, and comment/iffalse blocks."""
    out = []
    for line in src.split("\n"):
        cut = _comment_start(line)
        if cut is None:
            out.append(line)
        elif line[:cut].strip():
            out.append(line[:cut].rstrip())
        # a line that is only a comment disappears with its newline, as in TeX
    text = "\n".join(out)
    text = _cut_blocks(text, _COMMENT_BEGIN, _COMMENT_END)
    return _cut_blocks(text, _IFFALSE, _FI)


def _cut_blocks(text: str, start: re.Pattern, end: re.Pattern) -> str:
    """`re.sub(start.*?end, "", text, flags=re.S)` in linear time: a start with no end after it
    ends the cutting, since no later start has one either."""
    out, pos = [], 0
    while (m := start.search(text, pos)) is not None and (e := end.search(text, m.end())) is not None:
        out.append(text[pos:m.start()])
        pos = e.end()
    out.append(text[pos:])
    return "".join(out)


def _comment_start(line: str) -> int | None:
    i = line.find("%")
    while i != -1:
        # count the backslashes before %: odd means an escaped \%
        j = i - 1
        while j >= 0 and line[j] == "\\":
            j -= 1
        if (i - 1 - j) % 2 == 0:
            return i
        i = line.find("%", i + 1)
    return None


# -- main file ---------------------------------------------------------------------------------
def find_main(files: dict[str, str]) -> str | None:
    """The file with \\documentclass and \\begin{document}. Several: prefer main/ms, then one
    that no other candidate \\inputs, then the longest."""
    stripped = {p: strip_comments(t) for p, t in files.items() if _is_tex(p)}
    cands = [p for p, t in stripped.items() if _DOCCLASS.search(t) and _BEGIN_DOC.search(t)]
    if not cands:
        return None
    if len(cands) == 1:
        return cands[0]
    named = [p for p in cands if posixpath.splitext(posixpath.basename(p))[0].lower() in ("main", "ms")]
    if len(named) == 1:
        return named[0]
    pool = named or cands
    included = set()
    for p in pool:
        for m in _INPUT.finditer(stripped[p]):
            included.add(posixpath.splitext(posixpath.basename(_input_target(m)))[0])
    top = [p for p in pool if posixpath.splitext(posixpath.basename(p))[0] not in included] or pool
    return max(top, key=lambda p: (len(stripped[p]), p))


def _is_tex(path: str) -> bool:
    return path.lower().endswith((".tex", ".ltx", ".latex"))


def _input_target(m: re.Match) -> str:
    if m.group(2) or m.group(3):
        return (m.group(2) or m.group(3)).strip()
    return posixpath.join(m.group(4) or "", m.group(5).strip())


# -- inlining ----------------------------------------------------------------------------------
def inline_inputs(main: str, files: dict[str, str], used: list[str], missing: list[str]) -> str:
    """Replace \\input/\\include by the file's (comment-stripped) text, recursively, cycle-safe."""
    base_dir = posixpath.dirname(main)

    def resolve(name: str) -> str | None:
        name = name.strip().strip('"')
        for d in (base_dir, ""):
            p = posixpath.normpath(posixpath.join(d, name)) if d else posixpath.normpath(name)
            for cand in (p, p + ".tex"):
                if cand in files:
                    return cand
        return None

    def expand(path: str, stack: tuple[str, ...]) -> str:
        text = strip_comments(files[path])

        def sub(m: re.Match) -> str:
            target = _input_target(m)
            found = resolve(target)
            if found is None:
                if not target.lower().endswith((".pdf", ".png", ".jpg", ".eps", ".pdf_tex", ".pgf", ".tikz")) \
                        and target.lower() not in _TEX_PACKAGES:
                    missing.append(target)
                return ""
            if found in stack or len(stack) >= MAX_INPUT_DEPTH:
                return ""  # a cycle (or absurd depth): include once, never loop
            if found not in used:
                used.append(found)
            body = expand(found, stack + (found,))
            return "\n" + body + "\n"

        return _INPUT.sub(sub, text)

    used.append(main)
    return expand(main, (main,))


# -- macros ------------------------------------------------------------------------------------
def _braced(src: str, i: int, ends: dict[int, int]) -> tuple[str, int] | None:
    """The balanced {...} group starting at src[i] (after optional spaces): (content, end).
    `ends` is `_brace_ends(src)`; an escaped \\{ starts no group."""
    while i < len(src) and src[i] in " \t\n":
        i += 1
    if i >= len(src) or src[i] != "{" or src[i - 1] == "\\":
        return None
    j = ends.get(i)
    return None if j is None else (src[i + 1 : j], j + 1)


def _brace_ends(src: str) -> dict[int, int]:
    """Each { (not after a backslash) -> its closing } (not after a backslash), in one pass:
    scanning from every definition instead is quadratic when braces are left open (hostile input)."""
    ends: dict[int, int] = {}
    stack: list[int] = []
    for m in _BRACE.finditer(src):
        j = m.start()
        if src[j - 1] == "\\":
            continue
        if m.group() == "{":
            stack.append(j)
        elif stack:
            ends[stack.pop()] = j
    return ends


_BRACE = re.compile(r"[{}]")
_SPACES = re.compile(r"\s*")
_DEF_END = re.compile(r"[{\n]")


def collect_macros(src: str) -> tuple[dict[str, str], list[tuple[int, int]]]:
    """Argument-free macro definitions: {name: body} and the spans of all definitions found
    (with or without arguments), so the definitions themselves can be cut from the text.
    Linear in the text: no scan or copy from a definition to the end of the text."""
    macros: dict[str, str] = {}
    spans: list[tuple[int, int]] = []
    if _NEWCOMMAND.search(src) is None:  # most documents: none of the tables below is needed
        return macros, spans
    ends = _brace_ends(src)
    at = {p: [m.start() for m in p.finditer(src)] for p in (_DEF_END, _CLOSE_BRACKET, _HASH)}
    groups: dict[int, tuple[str, int] | None] = {}  # definitions on one line share where their body starts

    def find(pattern: re.Pattern, i: int) -> int:
        """Where `pattern` next matches at or after i (-1: nowhere), from positions found once:
        a search per definition would rescan the same stretch of text again and again."""
        pos = at[pattern]
        k = bisect.bisect_left(pos, max(i, 0))
        return pos[k] if k < len(pos) else -1

    for m in _NEWCOMMAND.finditer(src):
        name = next(g for g in m.groups() if g)
        i = m.end()
        is_def = m.group(0).lstrip("\\").startswith(("def", "gdef", "edef", "xdef"))
        has_args = False
        if is_def:
            k = find(_DEF_END, i)
            k = len(src) if k == -1 else k
            has_args = -1 < find(_HASH, i) < k
            i = k
        else:
            i = _SPACES.match(src, i).end()
            if src.startswith("[", i):
                has_args = True
                close = find(_CLOSE_BRACKET, i)
                i = close + 1 if close != -1 else i
                if src.startswith("[", _SPACES.match(src, i).end()):  # optional default argument
                    i = find(_CLOSE_BRACKET, i) + 1
        if i not in groups:
            groups[i] = _braced(src, i, ends)
        group = groups[i]
        if group is None:
            continue
        body, end = group
        spans.append((m.start(), end))
        if has_args or "#" in body or name in _PROTECTED:
            continue
        macros[name] = body
    return macros, spans


_CLOSE_BRACKET = re.compile(r"\]")
_HASH = re.compile("#")


def expand_macros(text: str, macros: dict[str, str]) -> tuple[str, int]:
    """Replace each \\name (not followed by a letter) by its body; bodies may use other macros.
    A trailing {} after the macro (`\\name{}`) goes too. Bounded, so recursive macros stop."""
    if not macros:
        return text, 0
    names = sorted(macros, key=len, reverse=True)
    pattern = re.compile(r"\\(" + "|".join(re.escape(n) for n in names) + r")(?![A-Za-z@])(\{\})?")
    count = 0
    # Bounded in size too: bodies that each call another macro many times grow the text
    # exponentially per pass (40 bytes became 3 GB in 26 s); past the budget macros stay unexpanded.
    room = MAX_GROWTH * len(text) + (1 << 20)
    for _ in range(8):  # nested definitions resolve within a few passes
        n_before = count

        def sub(m: re.Match) -> str:
            nonlocal count, room
            body = macros[m.group(1)]
            grow = len(body) - len(m.group(0))
            if count >= MAX_EXPANSIONS or grow > room:
                return m.group(0)
            count += 1
            room -= max(grow, 0)
            return body

        text = pattern.sub(sub, text)
        if count == n_before or count >= MAX_EXPANSIONS or room <= 0:
            break
    return text, count


def _cut_spans(text: str, spans: list[tuple[int, int]]) -> str:
    out, last = [], 0
    for a, b in sorted(spans):
        if a < last:
            continue
        out.append(text[last:a])
        last = b
    out.append(text[last:])
    return "".join(out)


_COMMAND_WITH_ARGS = re.compile(r"\\[A-Za-z@]+\*?(?:\s*\[[^\]]*\])*(?:\s*\{[^{}]*\})*")


def _prose_chars(body: str) -> int:
    """Letters left once every command and its arguments are gone (a PDF wrapper has ~none)."""
    return sum(c.isalpha() for c in _COMMAND_WITH_ARGS.sub("", body))


# -- the whole cleaning ------------------------------------------------------------------------
def clean_submission(files: dict[str, str], *, drop_appendix: bool = False, expand: bool = True) -> LatexResult:
    """Main file → body text: inlined, without comments, preamble, bibliography (and appendix)."""
    tex = [p for p in files if _is_tex(p)]
    if not tex:
        return LatexResult(None, "no_tex_source", "no .tex file")
    main = find_main(files)
    if main is None:
        return LatexResult(None, "no_main_file", f"{len(tex)} .tex file(s), none with \\documentclass and \\begin{{document}}")
    used: list[str] = []
    missing: list[str] = []
    full = inline_inputs(main, files, used, missing)
    begin = _BEGIN_DOC.search(full)
    preamble, body = (full[: begin.start()], full[begin.end():]) if begin else ("", full)
    end = _END_DOC.search(body)
    if end:
        body = body[: end.start()]
    res = LatexResult(None, main_file=main, files_used=used, missing_inputs=missing)
    if expand:
        macros, _ = collect_macros(preamble)
        body_macros, body_spans = collect_macros(body)
        body = _cut_spans(body, body_spans)
        macros.update(body_macros)
        body, res.macros_expanded = expand_macros(body, macros)
    body = _THEBIB.sub("", body)
    body = _BIBCMDS.sub("", body)
    if drop_appendix:
        m = _APPENDIX.search(body)
        if m:
            body = body[: m.start()]
            res.appendix_removed = True
    body = _BLANKS.sub("\n\n", body).strip()
    if not body:
        res.reason, res.detail = "no_text", "empty document body"
        return res
    if "\\includepdf" in body and _prose_chars(body) < 200:
        res.reason, res.detail = "no_tex_source", "PDF only: the LaTeX just wraps \\includepdf"
        return res
    res.text = body
    return res
