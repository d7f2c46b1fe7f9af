"""The prose of a text without its markup: LaTeX commands, math, tables, code blocks and HTML tags.

A classifier of prose (toxicity) must not read markup as words: a LaTeX table row such as
`Retrieval & Model & Row & P & R & F1 \\\\` is a line of short unknown tokens, and such lines scored
0.99+ (docs/toxicity.md, "Markup"). `prose(text)` keeps the text's lines and their words and drops:
  * code blocks (``` or ~~~ fences) and LaTeX environments that hold no prose (equation, align,
    tabular, table, figure, verbatim, lstlisting, tikzpicture, ...; starred forms too);
  * display math (`$$...$$`, `\\[...\\]`) and inline math (`\\(...\\)`, and `$...$` by pandoc's
    rule: the opening `$` has a non-space right of it, the closing one a non-space left of it and no
    digit after it, so "$5 or $10" is prose);
  * table rows: a line with a cell separator `&` and a LaTeX command or a `\\\\` row end, and
    Markdown table rows (a line starting and ending with `|`);
  * LaTeX commands (`\\textbf`, `\\'`), with the argument of those that name a reference or a file
    (`\\cite{...}`, `\\ref{...}`, `\\url{...}`, ...), braces and `%` comments; HTML tags (their text stays);
  * a line that held markup and keeps fewer than MIN_WORDS words of letters (what is left of a formula
    or a caption's label is not prose).
A text with none of the characters markup needs (`\\ $ & < | ``` ~~~`) is returned as it is.
"""
from __future__ import annotations

import re

MIN_WORDS = 3
_TRIGGERS = ("\\", "$", "&", "<", "|", "```", "~~~")
_FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n.*?(?:^[ \t]*\1[^\n]*$|\Z)", re.S | re.M)
_ENVS = ("equation|align|alignat|eqnarray|gather|multline|flalign|displaymath|math|array|tabular|tabularx|"
         "longtable|table|figure|verbatim|lstlisting|minted|tikzpicture|algorithm|algorithmic|thebibliography|"
         "deluxetable|matrix|pmatrix|bmatrix|cases|split|subequations")
_ENV = re.compile(r"\\begin\{(" + _ENVS + r")\*?\}.*?(?:\\end\{\1\*?\}|\Z)", re.S)
_DISPLAY = re.compile(r"\$\$.*?(?:\$\$|\Z)|\\\[.*?(?:\\\]|\Z)", re.S)
_INLINE = re.compile(r"\\\(.*?(?:\\\)|\Z)|\$(?=\S)[^$\n]{0,1000}?(?<=\S)\$(?!\d)", re.S)
_LATEX_COMMAND = re.compile(r"\\[a-zA-Z]")
_REF_ARG = re.compile(r"\\(?:cite[a-zA-Z]*|[cC]?ref|eqref|autoref|pageref|label|url|href|includegraphics|"
                      r"input|include|bibliography|bibliographystyle|usepackage|documentclass|fnref|cortext|"
                      r"begin|end|newcommand|renewcommand|def|setlength|vspace|hspace)\*?"
                      r"(?:\[[^\]\n]{0,200}\])?(?:\{[^{}\n]{0,500}\})?")
_COMMAND = re.compile(r"\\(?:[a-zA-Z@]+\*?|.)")
_COMMENT = re.compile(r"(?<!\\)%[^\n]*")
_TAG = re.compile(r"</?[a-zA-Z][a-zA-Z0-9]{0,20}(?:\s[^<>\n]{0,300})?/?>")
_BRACES = str.maketrans("{}", "  ")
_WORD = re.compile(r"[^\W\d_]{2,}")
_GONE = "\ue000"  # where math or an environment was dropped: the line held markup


def _table_row(line: str) -> bool:
    """A LaTeX table row (a cell separator `&` with a `\\\\` row end or a LaTeX command) or a Markdown
    one (`| ... |`). String tests, not one regex: a line of many `&` would make a regex backtrack
    quadratically."""
    if "&" in line and ("\\\\" in line or _LATEX_COMMAND.search(line)):
        return True
    bare = line.strip()
    return len(bare) > 1 and bare[0] == "|" and bare[-1] == "|"


def has_markup(text: str) -> bool:
    """Whether `text` holds a character that markup needs (else `prose` returns it unchanged)."""
    return any(c in text for c in _TRIGGERS)


def prose(text: str) -> str:
    """`text` with its markup dropped, line by line (see the module docstring)."""
    if not text or not has_markup(text):
        return text
    out = []
    if "```" in text or "~~~" in text:
        text = _FENCE.sub("\n", text)
    if "\\" in text or "$" in text:
        text = _ENV.sub("\n", text)
        text = _DISPLAY.sub(_GONE, text)
        text = _INLINE.sub(_GONE, text)
    for line in text.split("\n"):
        if not has_markup(line) and _GONE not in line:
            out.append(line)
            continue
        if _table_row(line):
            continue
        marked = _GONE in line
        if marked:
            line = line.replace(_GONE, " ")
        if "\\" in line:
            marked = True
            line = _COMMENT.sub(" ", line)
            line = _REF_ARG.sub(" ", line)
            line = _COMMAND.sub(" ", line).translate(_BRACES)
        if "<" in line:
            tagged = _TAG.sub(" ", line)
            marked = marked or tagged != line
            line = tagged
        if not marked or len(_WORD.findall(line)) >= MIN_WORDS:
            out.append(line)
    return "\n".join(out)
