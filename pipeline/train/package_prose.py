"""Clean prose read from an installed registry package: dev text for the toxicity trainer.

Why: ../shared has no licence-allowed clean French prose but 500 lingua sentences (its only French
training set, MLMA, is 80% hostile tweets). Added to training, the handbook's French made neutral
French sentences about groups score higher on the dev frames (technical prose displaced the everyday
lingua sentences in the per-language balance; docs/toxicity.md, "Identity fairness"), so it is not
trained on; `refinery train-toxicity` reports the share of its dev pages' paragraphs the model
rejects (clean prose that no model was tuned on), when the package is installed.

Source: the Debian package `debian-handbook` ("The Debian Administrator's Handbook" / "Le cahier de
l'administrateur Debian", Raphaël Hertzog and Roland Mas; `apt-get install debian-handbook`),
licensed GPL-2.0+ **or CC BY-SA 3.0** (/usr/share/doc/debian-handbook/copyright); used under
CC BY-SA 3.0. Its HTML has one folder per translation (fr-FR, de-DE, es-ES, ru-RU, ...). Only the
running text is read (`<div class="para">`, code blocks dropped); untranslated paragraphs (the
French build keeps about a third in English) are left out by the caller with a language check.
Nothing of it is copied into the repository: the trainer reads the installed files, and skips
the measurement when they are absent.
"""
from __future__ import annotations

from pathlib import Path

HANDBOOK = Path("/usr/share/doc/debian-handbook/html")
HANDBOOK_FOLDERS = {"fr": "fr-FR", "de": "de-DE", "es": "es-ES", "ru": "ru-RU", "pt": "pt-BR", "pl": "pl-PL",
                    "ja": "ja-JP", "zh": "zh-CN", "tr": "tr-TR", "ar": "ar-MA", "da": "da-DK", "ko": "ko-KR",
                    "en": "en-US"}
DEV_EVERY = 4  # every 4th page (sorted by name) is dev text, the others training text


def handbook_pages(lang: str, root: Path = HANDBOOK) -> list[Path]:
    """The translation's HTML pages, sorted; [] when the package (or the translation) is absent."""
    folder = root / HANDBOOK_FOLDERS.get(lang, "")
    return sorted(folder.glob("*.html")) if lang in HANDBOOK_FOLDERS and folder.is_dir() else []


def page_paragraphs(path: Path, min_chars: int = 40) -> list[str]:
    """Running-text paragraphs of one handbook page, whitespace collapsed; code blocks (`<pre>`) left out."""
    import lxml.html

    doc = lxml.html.parse(str(path)).getroot()
    for node in doc.xpath("//pre|//script|//style"):
        node.drop_tree()
    out = []
    for para in doc.xpath("//div[@class='para']"):
        text = " ".join(para.text_content().split())
        if len(text) >= min_chars:
            out.append(text)
    return out


def handbook_paragraphs(lang: str, part: str, root: Path = HANDBOOK) -> list[str]:
    """Paragraphs of the `train` or `dev` pages (every DEV_EVERY-th page is dev), in page order."""
    pages = handbook_pages(lang, root)
    chosen = [p for i, p in enumerate(pages) if (i % DEV_EVERY == DEV_EVERY - 1) == (part == "dev")]
    return [t for p in chosen for t in page_paragraphs(p)]
