"""Real documents for the quality benchmark and parity test, read in place from ../shared/corpora.

Each loader yields (source, lang, text). `lang` is the best label the corpus offers (HPLT's OpenLID
prediction, lingua's file name, "en" for the English corpora, None for the trafilatura pages).
"""
from __future__ import annotations

import gzip
import io
import json
import os
import random
import tarfile
from pathlib import Path
from typing import Iterator

import zstandard

Doc = tuple[str, "str | None", str]


def hplt(corpora: Path) -> Iterator[Doc]:
    """HPLT's extracted text (`t`) of 200 Common Crawl / Internet Archive pages."""
    for name in ("hplt_sample100_CC.jsonl.zst", "hplt_sample100_IAwide.jsonl.zst"):
        with open(corpora / "web" / name, "rb") as f:
            raw = zstandard.ZstdDecompressor().stream_reader(f).read()
        for line in raw.split(b"\n"):
            if not line.strip():
                continue
            rec = json.loads(line.decode("utf-8", errors="replace"))
            if rec.get("t"):
                yield f"hplt_{name.split('_')[2].split('.')[0]}", (rec.get("lang") or "")[:2] or None, rec["t"]


def wikitext(corpora: Path) -> Iterator[Doc]:
    """WikiText-2 validation articles (split on top-level ' = Title = ' headings)."""
    text = (corpora / "quality" / "wikitext2_valid.tokens.txt").read_text(encoding="utf-8")
    article: list[str] = []
    for line in text.split("\n"):
        s = line.strip()
        if s.startswith("= ") and s.endswith(" =") and not s.startswith("= ="):
            if article:
                yield "wikitext2", "en", "\n".join(article).strip()
            article = []
        article.append(line)
    if article:
        yield "wikitext2", "en", "\n".join(article).strip()


def fourchan(corpora: Path) -> Iterator[Doc]:
    with gzip.open(corpora / "quality" / "paloma_4chan_val.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            yield "paloma_4chan", "en", json.loads(line)["text"]


def sms(corpora: Path) -> Iterator[Doc]:
    with open(corpora / "quality" / "uci_sms_spam_collection.tsv", encoding="utf-8", errors="replace") as f:
        next(f)
        for line in f:
            label, _, text = line.rstrip("\n").partition("\t")
            yield f"sms_{label}", "en", text


def lingua(corpora: Path, langs: tuple[str, ...], per_doc: int = 10, docs_per_lang: int = 30) -> Iterator[Doc]:
    """10-sentence documents (one sentence per line) from lingua's per-language test sentences."""
    for lang in langs:
        sents = (corpora / "langid" / "lingua_sentences" / f"{lang}.txt").read_text(encoding="utf-8").splitlines()
        for i in range(min(docs_per_lang, len(sents) // per_doc)):
            yield f"lingua_{lang}", lang, "\n".join(sents[i * per_doc : (i + 1) * per_doc])


def trafilatura_pages(corpora: Path, limit: int | None = None, cache_dir: Path | None = None) -> Iterator[Doc]:
    """Main text extracted with trafilatura from the eval benchmark's HTML pages (cached outside the repo)."""
    cache_dir = cache_dir or Path(os.environ.get("REFINERY_CACHE", "/tmp/refinery_cache"))
    cache = cache_dir / "trafilatura_eval_extracted.jsonl"
    if not cache.exists():
        import trafilatura

        cache_dir.mkdir(parents=True, exist_ok=True)
        out = []
        with open(corpora / "web" / "trafilatura_eval_html_benchmark.tar.zst", "rb") as f:
            data = zstandard.ZstdDecompressor().stream_reader(f).read()
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            for m in sorted(tar.getmembers(), key=lambda m: m.name):
                if not m.isfile() or not m.name.endswith(".html"):
                    continue
                html = tar.extractfile(m).read().decode("utf-8", errors="replace")
                text = trafilatura.extract(html) or ""
                out.append({"name": m.name, "text": text})
        tmp = cache.with_suffix(".tmp")
        tmp.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in out), encoding="utf-8")
        tmp.replace(cache)
    n = 0
    for line in cache.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if rec["text"]:
            yield "trafilatura_eval", None, rec["text"]
            n += 1
            if limit and n >= limit:
                return


LINGUA_LANGS = ("en", "de", "fr", "es", "it", "nl", "pt", "pl", "ru", "tr", "vi", "zh", "ja")


def load_all(corpora: Path, *, with_trafilatura: bool = True, sample: int | None = None, seed: int = 0) -> list[Doc]:
    docs: list[Doc] = []
    docs += list(hplt(corpora))
    docs += list(wikitext(corpora))
    docs += list(fourchan(corpora))
    docs += list(sms(corpora))
    docs += list(lingua(corpora, LINGUA_LANGS))
    if with_trafilatura:
        docs += list(trafilatura_pages(corpora))
    if sample is not None and sample < len(docs):
        docs = random.Random(seed).sample(docs, sample)
    return docs
