"""The prose of a text without its markup (stages/_markup.py), as the toxicity stage scores it."""
from __future__ import annotations

import time

from hypothesis import given, strategies as st

from stages._markup import has_markup, prose

PLAIN = st.text(st.characters(blacklist_characters="\\$&<|`~\ue000"), max_size=300)


@given(PLAIN)
def test_text_without_markup_characters_is_unchanged(text):
    assert prose(text) == text


@given(st.text(max_size=300))
def test_never_more_lines_or_characters(text):
    out = prose(text)
    assert out.count("\n") <= text.count("\n") and len(out) <= len(text) + text.count("\n") + 1


def test_latex_tables_math_and_commands_are_dropped():
    doc = ("We study groups.\n"
           "Retrieval & Model & Row & P & R & F1 \\\\\n"
           "\\colhead{Galaxy} & \\colhead{Region} &\n"
           "The \\textbf{main} result, see \\cite{smith2020} and Table~\\ref{tab:x}, holds for $x^2+y$ too.\n"
           "\\begin{equation}\n a & = b \\\\\n\\end{equation}\n"
           "$\\mathrm{pw}(T)+1 \\le \\mathrm{td}(T)$.\n"
           "| a | b |\n"
           "```\nrm -rf idiot\n```\n"
           "Prices went from $5 to $10 & more.")
    out = prose(doc)
    assert "Retrieval" not in out and "Galaxy" not in out and "smith2020" not in out and "tab" not in out
    assert "mathrm" not in out and "idiot" not in out and "| a |" not in out
    assert "main" in out and "result" in out and "holds for" in out
    assert "$5 to $10 & more" in out  # prices are not math (pandoc's rule)
    assert out.splitlines()[0] == "We study groups."


def test_html_tags_keep_their_text_and_a_line_of_symbols_goes():
    assert prose("A <b>bold</b> claim about cats.").split() == ["A", "bold", "claim", "about", "cats."]
    assert prose("PSL<sub>k</sub>(2,<b>R</b>), Homeo<sub>k</sub>") == ""
    assert prose("Terms & Conditions") == "Terms & Conditions"  # an ampersand alone is prose
    assert has_markup("a & b") and not has_markup("plain words")


def test_hostile_markup_is_linear():
    """Lines of many `&`, `$`, unclosed environments and tags: each finishes (a regex over `&...\\\\`
    backtracked quadratically on a long line of `&`)."""
    for text in ("&" * 200_000 + "\\", "& \\x " * 60_000, "$" * 200_000, "$a " * 60_000,
                 "\\begin{equation}" * 20_000, "<b" * 100_000, "| " * 100_000 + "|", "```\n" * 50_000,
                 "\\" * 200_000, "{" * 200_000):
        out = prose(text)
        assert len(out) <= len(text) + 1


def test_an_unclosed_inline_math_opener_does_not_scan_to_the_end_each_time():
    from stages._markup import prose

    t = time.process_time()
    prose("\\(" * 40_000)  # 23 CPU-s when every unclosed \( scanned to the end of the text
    prose("a \\( b " * 20_000)
    assert time.process_time() - t < 10  # it takes milliseconds: a bound far from any margin
