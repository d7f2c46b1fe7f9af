"""A tiny document model for the report, rendered twice: Markdown and self-contained HTML.

Why not Markdown converted to HTML: no Markdown library is a dependency, and the HTML needs what
Markdown cannot say (embedded images, table ids the browser test finds, escaped audit text).
"""
from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field


@dataclass
class Heading:
    text: str
    level: int = 2


@dataclass
class Para:
    text: str  # plain text; rendered escaped


@dataclass
class Bullets:
    items: list[str]


@dataclass
class Table:
    headers: list[str]
    rows: list[list[str]]
    id: str | None = None
    caption: str | None = None


@dataclass
class Image:
    name: str  # file name next to report.md; .png or .svg
    data: bytes
    alt: str


@dataclass
class Quote:
    """A rejected document to audit: a heading line and its (cut) text."""

    title: str
    text: str


@dataclass
class Doc:
    title: str
    blocks: list = field(default_factory=list)

    def add(self, *blocks) -> None:
        self.blocks.extend(blocks)


# -- Markdown ---------------------------------------------------------------------------------
def _md_cell(s: str) -> str:
    return html.escape(str(s), quote=False).replace("|", "\\|").replace("\n", " ")


def anchors(doc: Doc) -> dict[int, str]:
    """A unique anchor for each heading (by its block index), from its text as GitHub makes them."""
    out: dict[int, str] = {}
    used: dict[str, int] = {"toc": 1}  # the table of contents' own id
    for i, b in enumerate(doc.blocks):
        if isinstance(b, Heading):
            slug = re.sub(r"[^\w\- ]", "", b.text.lower()).strip().replace(" ", "-") or "section"
            n = used.get(slug, 0)
            used[slug] = n + 1
            out[i] = slug if n == 0 else f"{slug}-{n}"
    return out


def contents(doc: Doc, depth: int = 3) -> list[tuple[int, str, str]]:
    """(level, text, anchor) of the headings down to `depth`: the report's table of contents."""
    ids = anchors(doc)
    return [(b.level, b.text, ids[i]) for i, b in enumerate(doc.blocks) if isinstance(b, Heading) and b.level <= depth]


def _md_link_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def to_markdown(doc: Doc) -> str:
    out = [f"# {doc.title}", ""]
    toc = contents(doc)
    if len(toc) > 3:
        out += ["Contents:", ""] + [f"{'  ' * (lv - 2)}- [{_md_link_text(t)}](#{a})" for lv, t, a in toc] + [""]
    for b in doc.blocks:
        if isinstance(b, Heading):
            out += ["#" * b.level + " " + b.text, ""]
        elif isinstance(b, Para):
            out += [b.text, ""]
        elif isinstance(b, Bullets):
            out += [f"- {i}" for i in b.items] + [""]
        elif isinstance(b, Table):
            if b.caption:
                out += [f"*{b.caption}*", ""]
            out.append("| " + " | ".join(_md_cell(h) for h in b.headers) + " |")
            out.append("|" + "|".join("---" for _ in b.headers) + "|")
            out += ["| " + " | ".join(_md_cell(c) for c in r) + " |" for r in b.rows]
            out.append("")
        elif isinstance(b, Image):
            out += [f"![{b.alt}]({b.name})", ""]
        elif isinstance(b, Quote):
            body = html.escape(b.text, quote=False).replace("\n", " ")
            out += [f"**{_md_cell(b.title)}**", "", f"> {body}", ""]
    return "\n".join(out).rstrip() + "\n"


# -- HTML -------------------------------------------------------------------------------------
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1100px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.92em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f2f2f2}td.n{text-align:right;white-space:nowrap}
caption{caption-side:top;text-align:left;font-style:italic;padding:.3em 0}
img{max-width:100%;height:auto;display:block;margin:.5em 0 1.2em}
blockquote{margin:.2em 0 1em;padding:.4em .8em;border-left:4px solid #c33;background:#fafafa;
white-space:pre-wrap;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.85em}
.qt{font-weight:600;margin-top:.8em}
nav#toc{border:1px solid #ddd;background:#fafafa;padding:.5em 1em;margin:1em 0}
nav#toc ul{margin:.3em 0;padding-left:1.2em}nav#toc li.l3{margin-left:1.2em;font-size:.92em}
nav#toc li.l4{margin-left:2.4em;font-size:.88em}a.up{font-size:.7em;text-decoration:none;color:#888}
"""

# Marks on <body> how many images decoded (naturalWidth > 0): what the browser test reads.
_IMAGE_CHECK = """
window.addEventListener('load', function () {
  var imgs = document.images, ok = 0;
  for (var i = 0; i < imgs.length; i++) { if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++; }
  document.body.setAttribute('data-images', imgs.length);
  document.body.setAttribute('data-images-loaded', ok);
});
"""


_NUMBER = re.compile(r"^[-+]?[\d.,]+(e[-+]?\d+)?\s*(%|[KMGTP]?B|[KMBT])?( \[.*\])?$|^-$")


def _td(cell: str) -> str:
    cls = ' class="n"' if _NUMBER.match(cell) else ""
    return f"<td{cls}>{html.escape(cell)}</td>"


def to_html(doc: Doc) -> str:
    e = html.escape
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{e(doc.title)}</title>", f"<style>{_CSS}</style>",
           f"<script>{_IMAGE_CHECK}</script>", "</head><body>", f"<h1>{e(doc.title)}</h1>"]
    ids = anchors(doc)
    toc = contents(doc)
    if len(toc) > 3:  # a long page: where each section is, and a way back (the headings link here)
        out.append('<nav id="toc"><b>Contents</b><ul>' + "".join(
            f'<li class="l{lv}"><a href="#{e(a)}">{e(t)}</a></li>' for lv, t, a in toc) + "</ul></nav>")
    for i, b in enumerate(doc.blocks):
        if isinstance(b, Heading):
            back = ' <a class="up" href="#toc">&#8593;</a>' if len(toc) > 3 else ""
            out.append(f'<h{b.level} id="{e(ids[i])}">{e(b.text)}{back}</h{b.level}>')
        elif isinstance(b, Para):
            out.append(f"<p>{e(b.text)}</p>")
        elif isinstance(b, Bullets):
            out.append("<ul>" + "".join(f"<li>{e(i)}</li>" for i in b.items) + "</ul>")
        elif isinstance(b, Table):
            tid = f' id="{e(b.id)}"' if b.id else ""
            cap = f"<caption>{e(b.caption)}</caption>" if b.caption else ""
            head = "<tr>" + "".join(f"<th>{e(h)}</th>" for h in b.headers) + "</tr>"
            body = "".join("<tr>" + "".join(_td(str(c)) for c in r) + "</tr>" for r in b.rows)
            out.append(f"<table{tid}>{cap}<thead>{head}</thead><tbody>{body}</tbody></table>")
        elif isinstance(b, Image):
            data = base64.b64encode(b.data).decode("ascii")
            mime = "image/svg+xml" if b.name.endswith(".svg") else "image/png"
            out.append(f'<img alt="{e(b.alt)}" src="data:{mime};base64,{data}">')
        elif isinstance(b, Quote):
            out.append(f'<div class="qt">{e(b.title)}</div><blockquote>{e(b.text)}</blockquote>')
    out.append("</body></html>")
    return "\n".join(out) + "\n"
