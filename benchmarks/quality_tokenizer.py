"""The quality stage's word tokenizer against spaCy on every distinct chunk of every corpus in ../shared.

datatrove's quality filters split words with spaCy's blank English tokenizer; the quality stage
tokenizes each whitespace chunk with `ChunkTokenizer` (plain-word fast paths, then `SpacyRules`,
spaCy's affix algorithm in Python, then spaCy itself where its special-case matcher could apply).
This reads every file under ../shared/corpora (decompressing .gz/.zst/.tar/.zip, skipping binary
files and encrypted archives), takes every distinct whitespace chunk of its text, and compares the
stage's tokens with `spacy.blank("en").tokenizer(chunk)` called on that chunk alone. It also times
the two on the chunks that are not plain words (the ones the stage used to send to spaCy).

    PYTHONPATH=. python benchmarks/quality_tokenizer.py [--limit-files N]
"""
from __future__ import annotations

import argparse
import collections
import gzip
import io
import os
import tarfile
import time
import zipfile
from pathlib import Path

import zstandard

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"


def _texts_of(name: str, data: bytes):
    """(member name, text) of a file's contents, opening archives and compression."""
    low = name.lower()
    if low.endswith(".zst"):
        data = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)).read()
        name, low = name[:-4], low[:-4]
    elif low.endswith(".gz") or low.endswith(".tgz"):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError):
            return
        name = name[:-3] if low.endswith(".gz") else name[:-4] + ".tar"
        low = name.lower()
    if low.endswith(".tar"):
        try:
            with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                for m in tar.getmembers():
                    if m.isfile():
                        yield from _texts_of(f"{name}/{m.name}", tar.extractfile(m).read())
        except tarfile.TarError:
            pass
        return
    if low.endswith(".zip"):
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                for info in z.infolist():
                    if info.flag_bits & 0x1:  # encrypted (BAN-PL asks not to decrypt it into copies)
                        continue
                    yield from _texts_of(f"{name}/{info.filename}", z.read(info))
        except zipfile.BadZipFile:
            pass
        return
    if b"\x00" in data[:4096]:
        return  # binary (images, PDFs, fonts)
    yield name, data.decode("utf-8", errors="replace")


def corpus_chunks(root: Path, limit_files: int | None = None) -> tuple[collections.Counter, dict[str, int]]:
    """Distinct whitespace chunks of every text file under root (with counts), and chunks per top folder."""
    chunks: collections.Counter = collections.Counter()
    per_folder: dict[str, int] = collections.Counter()
    n = 0
    for dirpath, _, files in sorted(os.walk(root)):
        for f in sorted(files):
            path = Path(dirpath) / f
            folder = path.relative_to(root).parts[0]
            for _, text in _texts_of(str(path), path.read_bytes()):
                parts = text.split()
                per_folder[folder] += len(parts)
                chunks.update(parts)
            n += 1
            if limit_files and n >= limit_files:
                return chunks, per_folder
    return chunks, per_folder


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit-files", type=int, default=None)
    ap.add_argument("--show", type=int, default=20)
    args = ap.parse_args()

    import spacy

    from stages.quality.word_tokenizer import ChunkTokenizer, SpacyRules

    t0 = time.time()
    chunks, per_folder = corpus_chunks(CORPORA, args.limit_files)
    print(f"{sum(chunks.values()):,} chunks, {len(chunks):,} distinct, read in {time.time() - t0:.0f}s; per folder: "
          + ", ".join(f"{k} {v:,}" for k, v in sorted(per_folder.items())))
    nlp = spacy.blank("en")
    spacy_tok = nlp.tokenizer
    tok = ChunkTokenizer()
    rules = SpacyRules(spacy_tok)
    distinct = sorted(chunks)

    # the stage's tokens (fast paths, SpacyRules, spaCy fallback), memo cleared in batches
    kinds = collections.Counter()
    bad = []
    for k in range(0, len(distinct), 20_000):
        batch = distinct[k : k + 20_000]
        tok.learn(batch)
        for c in batch:
            ours = tok._tokens[c]
            truth = tuple(t.text for t in spacy_tok(c) if t.text.strip())
            if ours != truth:
                bad.append((c, ours, truth))
        tok.clear()
    # how each chunk was handled, and SpacyRules alone on the ones it takes
    hard = []
    for c in distinct:
        if not c or (c.isalpha() and c not in rules._specials):
            kinds["plain word"] += 1
        elif ((c[-1] in ",;:!?" or (c[-1] == "." and len(c) > 1 and tok._splits_dot(c[-2]))) and c[:-1].isalpha()
              and c not in rules._specials and c[:-1] not in rules._specials):
            kinds["word + one mark"] += 1
        else:
            hard.append(c)
            kinds["SpacyRules" if rules.tokens(c) is not None else "spaCy (matcher pattern)"] += 1
    print("handled by: " + ", ".join(f"{k} {v:,}" for k, v in kinds.items()))
    print(f"stage tokens == spaCy tokens on {len(distinct) - len(bad):,} of {len(distinct):,} distinct chunks "
          f"({len(bad)} differ)")
    for c, ours, truth in bad[: args.show]:
        print(f"  {c!r}: ours {ours} spaCy {truth}")

    # speed on the chunks that are not plain words: spaCy one call per 2,000 (as the stage batched
    # them before) vs SpacyRules, each on a fresh tokenizer, alternated 3 times
    sample = hard[:: max(1, len(hard) // 100_000)]
    res = collections.defaultdict(list)
    for _ in range(3):
        fresh = spacy.blank("en")
        fresh.vocab.lex_attr_getters = {}
        t = time.process_time()
        for k in range(0, len(sample), 2000):
            fresh.tokenizer("\n".join(sample[k : k + 2000]))
        res["spaCy"].append(time.process_time() - t)
        r = SpacyRules(fresh.tokenizer)
        t = time.process_time()
        for c in sample:
            r.tokens(c)
        res["SpacyRules"].append(time.process_time() - t)
    med = {k: sorted(v)[1] for k, v in res.items()}
    print(f"{len(sample):,} non-plain chunks: spaCy {1e6 * med['spaCy'] / len(sample):.1f} us/chunk, SpacyRules "
          f"{1e6 * med['SpacyRules'] / len(sample):.1f} us/chunk (CPU, medians of 3): "
          f"{med['spaCy'] / med['SpacyRules']:.1f}x")


if __name__ == "__main__":
    main()
