"""End-to-end mixture on real text: kept-style Parquet from ../shared/corpora, then `refinery mix`.

Sources (each a cleaned 'run' with one source): wiki = WikiText-2 articles, web = HPLT pages,
forum = 4chan threads, multi = lingua sentences (75 languages, 25 per document), papers = the
arXiv .tex files found in the corpora (few, large documents). Prints the mixture table and the
time of each step; checks that achieved proportions are within 0.5 pp.

    PYTHONPATH=. /work/main/.venv/bin/python benchmarks/mixture.py [--budget 3M] [--workers 2]
"""
from __future__ import annotations

import argparse
import gzip
import io
import json
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"
sys.path.insert(0, str(ROOT))

from pipeline.mixture.build import build_mixture, summary_lines  # noqa: E402
from pipeline.mixture.recipe import load_mixture  # noqa: E402
from pipeline.schema import conform, full_schema, make_record  # noqa: E402


def tex_documents() -> list[str]:
    """Concatenated .tex of every arXiv submission in the corpora (tar, tar.gz, tgz, folders)."""
    docs = []
    for p in sorted((CORPORA / "arxiv").iterdir()):
        parts = []
        try:
            if p.is_dir():
                parts = [f.read_text(errors="replace") for f in sorted(p.rglob("*.tex"))]
            elif p.suffix == ".tex":
                parts = [p.read_text(errors="replace")]
            elif tarfile.is_tarfile(p):
                with tarfile.open(p) as tf:
                    for m in tf.getmembers():
                        if m.isfile() and m.name.endswith(".tex") and not Path(m.name).name.startswith("._"):
                            parts.append(tf.extractfile(m).read().decode("utf-8", "replace"))
        except (OSError, tarfile.TarError):
            continue
        if parts:
            docs.append("\n".join(parts))
    return docs


def sources() -> dict[str, list[str]]:
    import zstandard

    wiki = []
    for name in ("wikitext2_valid.tokens.txt", "wikitext2_test.tokens.txt"):
        raw = (CORPORA / "quality" / name).read_text(encoding="utf-8")
        wiki += [p.strip() for p in raw.split("\n = ") if p.strip()]
    web = []
    for name in ("hplt_sample100_CC.jsonl.zst", "hplt_sample100_IAwide.jsonl.zst"):
        with open(CORPORA / "web" / name, "rb") as f:
            lines = io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(f), encoding="utf-8", errors="replace")
            web += [json.loads(line).get("t") or "" for line in lines if line.strip()]
    with gzip.open(CORPORA / "quality" / "paloma_4chan_val.jsonl.gz", "rt", encoding="utf-8") as f:
        forum = [json.loads(line)["text"] for line in f if line.strip()]
    multi = []
    for p in sorted((CORPORA / "langid" / "lingua_sentences").glob("??.txt")):
        lines = p.read_text(encoding="utf-8").splitlines()
        multi += [" ".join(lines[i : i + 25]) for i in range(0, len(lines), 25)]
    return {"wiki": wiki, "web": [t for t in web if t], "forum": forum, "multi": multi, "papers": tex_documents()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", default="3M")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-ray", action="store_true")
    a = ap.parse_args()
    weights = {"web": 0.25, "wiki": 0.2, "multi": 0.3, "forum": 0.15, "papers": 0.1}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        mix = {"sources": {}, "budget": a.budget, "seed": 0, "max_epochs": 4, "workers": a.workers}
        for name, texts in sources().items():
            (tmp / name / "kept").mkdir(parents=True)
            recs = [make_record(source=name, kind="jsonl", file=name, offset=i, text=t) for i, t in enumerate(texts)]
            table = conform(pa.Table.from_pylist(recs), full_schema([]))
            pq.write_table(table, tmp / name / "kept" / "part-00000.parquet", compression="zstd", row_group_size=500)
            mix["sources"][name] = {"weight": weights[name], "run": str(tmp / name)}
            print(f"{name:<8} {len(texts):>6,} documents, {sum(len(t.encode()) for t in texts) / 1e6:6.1f} MB")
        (tmp / "mix.yaml").write_text(yaml.safe_dump(mix))
        t = time.perf_counter()
        report = build_mixture(load_mixture(tmp / "mix.yaml"), tmp / "out", use_ray=not a.no_ray)
        wall = time.perf_counter() - t
        print()
        print("\n".join(summary_lines(report)))
        print(f"\nmax deviation {report['totals']['max_deviation_pp']:.3f} pp; tokenize {report['seconds']['tokenize']:.1f} s, "
              f"total {wall:.1f} s ({report['totals']['unique_tokens'] / report['seconds']['tokenize']:,.0f} unique tokens/s "
              f"incl. Ray start-up)")
        assert report["totals"]["max_deviation_pp"] < 0.5


if __name__ == "__main__":
    main()
