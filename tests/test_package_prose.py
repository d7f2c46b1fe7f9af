"""Reading clean prose from the installed debian-handbook (pipeline/train/package_prose.py)."""
from __future__ import annotations

from pipeline.train import package_prose

PAGE = """<?xml version="1.0" encoding="UTF-8"?>
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>t</title><script>var x = "not prose";</script></head>
<body><p id="title">Le cahier</p><div class="section">
<div class="para">
    Le système de paquets de Debian permet <code class="command">apt</code> de gérer
    les   logiciels de la page {n}.
</div>
<pre class="screen">$ apt install paquet-qui-ne-doit-pas-apparaitre</pre>
<div class="para">Court.</div>
</div></body></html>
"""


def _handbook(tmp_path, pages=5):
    folder = tmp_path / "fr-FR"
    folder.mkdir()
    for n in range(pages):
        (folder / f"page{n}.html").write_text(PAGE.format(n=n), encoding="utf-8")
    return tmp_path


def test_running_text_only_with_whitespace_collapsed(tmp_path):
    root = _handbook(tmp_path, pages=1)
    paras = package_prose.page_paragraphs(root / "fr-FR" / "page0.html")
    assert paras == ["Le système de paquets de Debian permet apt de gérer les logiciels de la page 0."]


def test_every_fourth_page_is_dev_and_the_parts_are_disjoint(tmp_path):
    root = _handbook(tmp_path, pages=9)
    train = package_prose.handbook_paragraphs("fr", "train", root)
    dev = package_prose.handbook_paragraphs("fr", "dev", root)
    assert [p[-2] for p in dev] == ["3", "7"]
    assert len(train) == 7 and not set(train) & set(dev)


def test_absent_package_or_translation_gives_nothing(tmp_path):
    assert package_prose.handbook_paragraphs("fr", "train", tmp_path / "missing") == []
    assert package_prose.handbook_paragraphs("xx", "train", _handbook(tmp_path)) == []
