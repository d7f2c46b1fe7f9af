"""LaTeX cleaning: comments, inlining, macros, preamble, bibliography, appendix."""
from __future__ import annotations

import pytest

from pipeline.sources.latex import clean_submission, collect_macros, expand_macros, find_main, strip_comments

MAIN = r"""\documentclass{article}
\usepackage{amsmath}
\newcommand{\R}{\mathbb{R}}
\newcommand\eps{\varepsilon}
\def\half{\frac{1}{2}}
\newcommand{\norm}[1]{\lVert #1 \rVert}
\input{macros}
\begin{document}
\title{On things}
% a full-line comment
Let $x \in \R$ and $\eps>0$; then $\half x$ costs 5\% more. % trailing comment
\input{sections/intro}
\include{missing-chapter}
Norm: $\norm{x}$ and \NN{} and \field.
\begin{thebibliography}{9}
\bibitem{a} A. Author, Some paper.
\end{thebibliography}
\bibliographystyle{plain}
\bibliography{refs}
\appendix
\section{Proofs}
Appendix text.
\end{document}
"""


def files(**extra):
    base = {
        "main.tex": MAIN,
        "macros.tex": r"\newcommand{\NN}{\mathbb{N}}\newcommand{\field}{\mathbb{F}_{\NN}}",
        "sections/intro.tex": "\\section{Intro}\nIntro text with \\R.\n\\input{sections/loop}\n",
        "sections/loop.tex": "Loop text.\n\\input{sections/intro}\n",
    }
    base.update(extra)
    return base


def test_full_cleaning():
    res = clean_submission(files())
    t = res.text
    assert res.reason is None and res.main_file == "main.tex"
    assert "\\documentclass" not in t and "usepackage" not in t  # preamble gone
    assert "comment" not in t and "5\\% more" in t  # comments gone, \% kept
    assert "$x \\in \\mathbb{R}$" in t and "\\varepsilon>0" in t and "\\frac{1}{2} x" in t
    assert "\\norm{x}" in t  # macros with arguments are left alone
    assert "\\mathbb{N} and \\mathbb{F}_{\\mathbb{N}}" in t  # nested macro from an \input file
    assert "Intro text with \\mathbb{R}" in t and t.count("Loop text.") == 1  # cycle inlined once
    assert "thebibliography" not in t and "Some paper" not in t and "\\bibliography" not in t
    assert "Appendix text." in t  # appendices kept by default
    assert res.missing_inputs == ["missing-chapter"]
    assert res.files_used == ["main.tex", "macros.tex", "sections/intro.tex", "sections/loop.tex"]
    assert res.macros_expanded >= 6


def test_drop_appendix():
    res = clean_submission(files(), drop_appendix=True)
    assert "Appendix text." not in res.text and "Proofs" not in res.text and res.appendix_removed


def test_no_expansion_option():
    assert "\\R" in clean_submission(files(), expand=False).text


def test_main_file_choice():
    doc = "\\documentclass{article}\\begin{document}x\\end{document}"
    assert find_main({"a.tex": doc, "ms.tex": doc, "b.tex": "no"}) == "ms.tex"
    assert find_main({"paper.tex": doc + "longer", "supp.tex": doc}) == "paper.tex"
    # a commented-out documentclass does not count
    assert find_main({"a.tex": "% \\documentclass{article}\n\\begin{document}x"}) is None


def test_rejections():
    assert clean_submission({"fig.pdf": ""}).reason == "no_tex_source"
    assert clean_submission({"a.tex": "just text"}).reason == "no_main_file"
    wrapper = "\\documentclass{article}\\usepackage{pdfpages}\\begin{document}\\includepdf[pages=-]{p.pdf}\\end{document}"
    assert clean_submission({"main.tex": wrapper}).reason == "no_tex_source"
    empty = "\\documentclass{article}\\begin{document}\n% nothing\n\\end{document}"
    assert clean_submission({"main.tex": empty}).reason == "no_text"


def test_strip_comments_escapes():
    assert strip_comments("a \\% b % c") == "a \\% b"
    assert strip_comments("line\\\\% comment") == "line\\\\"  # \\ then a real comment
    assert strip_comments("x\n% whole\ny") == "x\ny"
    assert strip_comments("a\n\\begin{comment}\nhidden\n\\end{comment}\nb") == "a\n\nb"


def test_macro_edge_cases():
    macros, spans = collect_macros(r"\newcommand{\a}{A}\renewcommand*{\b}{B\a}\providecommand{\c}[1]{#1}\def\d#1{#1}")
    assert macros == {"a": "A", "b": "B\\a"} and len(spans) == 4
    text, n = expand_macros(r"\b \a \ab \a{}x", macros)
    assert text == r"BA A \ab Ax" and n == 4
    # self-recursive definitions stop
    text, _ = expand_macros(r"\x", {"x": r"\x\x"})
    assert len(text) < 10_000


def test_input_forms_and_nested_main():
    doc = ("\\documentclass{article}\\begin{document}\n\\input intro\n\\import{chap/}{two}\n"
           "\\subfile{three.tex}\n\\input{fig.pdf_tex}\\input xy\n\\end{document}")
    files = {"paper/main.tex": doc, "paper/intro.tex": "One.", "paper/chap/two.tex": "Two.", "three.tex": "Three."}
    res = clean_submission(files)
    assert res.main_file == "paper/main.tex"
    assert [x in res.text for x in ("One.", "Two.", "Three.")] == [True, True, True]
    assert res.missing_inputs == []  # figures and plain-TeX packages are not missing files


def test_a_macro_bomb_stays_within_its_size_budget():
    """Bodies that call other macros many times grew 40 bytes of text to 3 GB (26 s, 2.9 GiB)."""
    from pipeline.sources.latex import MAX_GROWTH, expand_macros

    macros = {"a": "\\b" * 1000, "b": "\\c" * 1000, "c": "xyz" * 100}
    text = "\\a " * 10
    out, n = expand_macros(text, macros)
    assert len(out) <= MAX_GROWTH * len(text) + (1 << 20) + len(text)
    assert 0 < n < 10_000
    assert expand_macros("\\title{\\x}", {"x": "Fine"}) == ("\\title{Fine}", 1)  # normal use unchanged


def test_comment_blocks_are_cut_as_the_lazy_regex_cuts_them():
    import random
    import re

    old_env = re.compile(r"\\begin\s*\{comment\}.*?\\end\s*\{comment\}", re.S)
    old_if = re.compile(r"\\iffalse\b.*?\\fi\b", re.S)
    pieces = ["\\iffalse", "\\iffalsex", "\\fi", "\\fix", "\\begin{comment}", "\\begin {comment}", "\\end{comment}",
              "\\end  {comment}", "word", " ", "\n", "x"]
    rng = random.Random(0)
    for _ in range(2000):
        src = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        assert strip_comments(src) == old_if.sub("", old_env.sub("", src)), src


def test_unclosed_comment_blocks_take_linear_time():
    """`\\iffalse` or `\\begin{comment}` without an end, repeated: the lazy regex rescanned the rest
    of the text for each (8,000 of them in 120 kB: 7 s; a few MB: hours). Ratio of two sizes, so
    no machine speed is assumed: linear is ~4x for 4x the input, quadratic ~16x."""
    import time

    def cost(n: int) -> float:
        src = ("\\iffalse word \\begin{comment} word " * n) + "\\end{document}"
        best = float("inf")
        for _ in range(5):
            t = time.process_time()  # CPU time: a loaded machine slows the wall clock, not this
            strip_comments(src)
            best = min(best, time.process_time() - t)
        return best

    assert cost(8000) / cost(2000) < 8


def _old_collect_macros(src):
    """collect_macros as it was (quadratic on open braces), to check the linear one against."""
    import re

    from pipeline.sources.latex import _NEWCOMMAND, _PROTECTED

    def braced(src, i):
        while i < len(src) and src[i] in " \t\n":
            i += 1
        if i >= len(src) or src[i] != "{":
            return None
        depth = 0
        for j in range(i, len(src)):
            c = src[j]
            if c == "\\":
                continue
            if c == "{" and src[j - 1] != "\\":
                depth += 1
            elif c == "}" and src[j - 1] != "\\":
                depth -= 1
                if depth == 0:
                    return src[i + 1 : j], j + 1
        return None

    macros, spans = {}, []
    for m in _NEWCOMMAND.finditer(src):
        name = next(g for g in m.groups() if g)
        i = m.end()
        is_def = m.group(0).lstrip("\\").startswith(("def", "gdef", "edef", "xdef"))
        has_args = False
        if is_def:
            k = i
            while k < len(src) and src[k] not in "{\n":
                k += 1
            has_args = "#" in src[i:k]
            i = k
        else:
            rest = src[i:].lstrip()
            i = len(src) - len(rest)
            if rest.startswith("["):
                has_args = True
                close = src.find("]", i)
                i = close + 1 if close != -1 else i
                if src[i:].lstrip().startswith("["):
                    i = src.find("]", i) + 1
        group = braced(src, i)
        if group is None:
            continue
        body, end = group
        spans.append((m.start(), end))
        if has_args or "#" in body or name in _PROTECTED:
            continue
        macros[name] = body
    return macros, spans


def test_macro_definitions_are_found_as_before():
    import random

    pieces = ["\\newcommand", "\\renewcommand*", "\\providecommand", "\\def", "\\gdef", "{", "}", "\\}", "\\a", "{\\b}",
              "\\c", "[1]", "[x]", "[", "]", "#1", " ", "\n", "word", "\\input", "\\section"]
    rng = random.Random(1)
    for _ in range(5000):
        src = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 25)))
        assert collect_macros(src) == _old_collect_macros(src), src
    assert collect_macros("\\def\\a\\{x} \\newcommand{\\b}{y}") == ({"b": "y"}, [(11, 29)])  # \{ opens no group


@pytest.mark.parametrize("piece", ["\\newcommand{\\a}{ ", "\\def\\a ", "\\newcommand{\\a}[1][ ", "\\def\\a\n" + " " * 50])
def test_open_macro_definitions_take_linear_time(piece):
    """A definition whose body never closes, repeated: each scanned (and copied) the rest of the text,
    8,000 of them in 130 kB took 40 s. Ratio of two sizes: linear ~4x for 4x the input, quadratic ~16x."""
    import time

    def cost(n: int) -> float:
        src = piece * n + "]" + "x" * 1000
        best = float("inf")
        for _ in range(5):
            t = time.process_time()  # CPU time: a loaded machine slows the wall clock, not this
            collect_macros(src)
            best = min(best, time.process_time() - t)
        return best

    assert cost(8000) / cost(2000) < 8
