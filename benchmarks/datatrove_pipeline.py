"""The datatrove 0.10 side of the whole-pipeline benchmark, wired as datatrove's own examples do.

`--executor local` runs the steps under LocalPipelineExecutor (a process pool of `workers`),
`--executor ray` under RayPipelineExecutor (same steps, tasks and workers: `workers` Ray tasks at a
time, one CPU each, on a Ray started by this script with `workers` CPUs).

Run as a script (the benchmark starts it as a subprocess so that its CPU time is measured alone):

  A  per input shard:   WarcReader -> Trafilatura -> LanguageFilter -> GopherRepetitionFilter ->
                        GopherQualityFilter -> C4QualityFilter -> FineWebQualityFilter ->
                        JsonlWriter(filtered) -> MinhashDedupSignature
  B  per LSH band:      MinhashDedupBuckets                    (tasks = bands)
  C  once:              MinhashDedupCluster
  D  per shard:         JsonlReader(filtered) -> MinhashDedupFilter -> JsonlWriter(near_deduped)
                        -> ExactDedupSignature
  E  once:              ExactFindDedups
  F  per shard:         JsonlReader(near_deduped) -> ExactDedupFilter -> JsonlWriter(final)

Every filter has an exclusion writer (removed/STEP/), so the benchmark can tell which step
dropped which document. The only departures from datatrove's defaults, both for an offline,
comparable run: LanguageFilter loads the fastText lid.176.ftz refinery ships (the
file refinery's langid stage uses) instead of downloading lid.176.bin, and exact dedup hashes the
NFC, whitespace-collapsed text (refinery's exact_dedup normalisation; datatrove's content getter
is user-supplied anyway). Signatures go right after the writer in A (datatrove writers pass
documents through), which saves datatrove a second read of the filtered data.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import unicodedata


def normalised_text(doc) -> str:
    return " ".join(unicodedata.normalize("NFC", doc.text).split())


def lid_model_url() -> str:
    from stages.langid import bundled_model_path

    return "file://" + str(bundled_model_path())


def build_executors(args) -> dict:
    if args.executor == "ray":
        from datatrove.executor.ray import RayPipelineExecutor as Executor
    else:
        from datatrove.executor import LocalPipelineExecutor as Executor
    from datatrove.pipeline.dedup import MinhashDedupSignature
    from datatrove.pipeline.dedup.exact_dedup import (
        ExactDedupConfig,
        ExactDedupFilter,
        ExactDedupSignature,
        ExactFindDedups,
    )
    from datatrove.pipeline.dedup.minhash import (
        MinhashConfig,
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
    )
    from datatrove.pipeline.extractors import Trafilatura
    from datatrove.pipeline.filters import (
        C4QualityFilter,
        FineWebQualityFilter,
        GopherQualityFilter,
        GopherRepetitionFilter,
        LanguageFilter,
    )
    from datatrove.pipeline.readers import JsonlReader, WarcReader
    from datatrove.pipeline.writers.jsonl import JsonlWriter

    w = args.work
    removed = lambda step: JsonlWriter(os.path.join(w, "removed", step))  # noqa: E731
    lang = LanguageFilter(languages=args.languages or None, exclusion_writer=removed("langid"))
    lang.model.MODEL_URL = args.lid_url  # instance attribute: read by FastTextLID.model at first use
    minhash = MinhashConfig(n_grams=args.ngram, num_buckets=args.bands, hashes_per_bucket=args.rows, seed=1)
    exact = ExactDedupConfig(content_getter=normalised_text)
    common = dict(workers=args.workers, skip_completed=False)
    if args.executor == "ray":
        # One CPU per task (datatrove's default) and `workers` tasks at a time, as the local pool.
        common.update(cpus_per_task=1, mem_per_cpu_gb=1)

    a = Executor(
        pipeline=[
            WarcReader(args.input, glob_pattern="*.warc.gz"),
            Trafilatura(favour_precision=True, timeout=args.timeout),
            lang,
            GopherRepetitionFilter(exclusion_writer=removed("gopher_repetition")),
            GopherQualityFilter(exclusion_writer=removed("gopher_quality")),
            C4QualityFilter(exclusion_writer=removed("c4")),
            FineWebQualityFilter(exclusion_writer=removed("fineweb")),
            JsonlWriter(os.path.join(w, "filtered")),
            MinhashDedupSignature(output_folder=os.path.join(w, "minhash", "sigs"), config=minhash),
        ],
        tasks=args.tasks, logging_dir=os.path.join(w, "logs", "A_filter_signatures"), **common,
    )
    b = Executor(
        pipeline=[MinhashDedupBuckets(input_folder=os.path.join(w, "minhash", "sigs"),
                                      output_folder=os.path.join(w, "minhash", "buckets"), config=minhash)],
        tasks=minhash.num_buckets, logging_dir=os.path.join(w, "logs", "B_minhash_buckets"), depends=a, **common,
    )
    c = Executor(
        pipeline=[MinhashDedupCluster(input_folder=os.path.join(w, "minhash", "buckets"),
                                      output_folder=os.path.join(w, "minhash", "remove_ids"), config=minhash)],
        tasks=1, logging_dir=os.path.join(w, "logs", "C_minhash_cluster"), depends=b, **common,
    )
    d = Executor(
        pipeline=[
            JsonlReader(os.path.join(w, "filtered")),
            MinhashDedupFilter(input_folder=os.path.join(w, "minhash", "remove_ids"),
                               exclusion_writer=removed("minhash_dedup")),
            JsonlWriter(os.path.join(w, "near_deduped")),
            ExactDedupSignature(output_folder=os.path.join(w, "exact", "sigs"), config=exact),
        ],
        tasks=args.tasks, logging_dir=os.path.join(w, "logs", "D_minhash_filter_exact_signatures"), depends=c,
        **common,
    )
    e = Executor(
        pipeline=[ExactFindDedups(data_folder=os.path.join(w, "exact", "sigs"),
                                  output_folder=os.path.join(w, "exact", "dups"), config=exact)],
        tasks=1, logging_dir=os.path.join(w, "logs", "E_exact_find"), depends=d, **common,
    )
    f = Executor(
        pipeline=[
            JsonlReader(os.path.join(w, "near_deduped")),
            ExactDedupFilter(data_folder=os.path.join(w, "exact", "dups"), config=exact,
                             exclusion_writer=removed("exact_dedup")),
            JsonlWriter(os.path.join(w, "final")),
        ],
        tasks=args.tasks, logging_dir=os.path.join(w, "logs", "F_exact_filter"), depends=e, **common,
    )
    return {"A": a, "B": b, "C": c, "D": d, "E": e, "F": f}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="datatrove side of benchmarks/pipeline_vs_datatrove.py")
    ap.add_argument("--input", required=True, help="directory of .warc.gz shards")
    ap.add_argument("--work", required=True, help="output/work directory (replaced)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tasks", type=int, required=True, help="tasks of the per-shard steps (= input shards)")
    ap.add_argument("--languages", nargs="*", default=["en"])
    ap.add_argument("--bands", type=int, default=14)
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--ngram", type=int, default=5)
    ap.add_argument("--executor", choices=["local", "ray"], default="local",
                    help="LocalPipelineExecutor (a process pool) or RayPipelineExecutor (a Ray started here "
                         "with `workers` CPUs, its own temp dir and free ports)")
    ap.add_argument("--timeout", type=float, default=10.0, help="Trafilatura's per-document timeout (s)")
    ap.add_argument("--lid-url", default=None, help="fastText LID model URL (default: the lid.176.ftz refinery ships)")
    args = ap.parse_args(argv)
    args.lid_url = args.lid_url or lid_model_url()
    # The LID "download" is a local copy into datatrove's cache, done once before timing starts.
    from datatrove.utils.lid import FT176LID

    warm = FT176LID(args.languages)
    warm.MODEL_URL = args.lid_url
    _ = warm.model

    ex = build_executors(args)
    t0 = time.time()
    if args.executor == "ray":
        import tempfile

        import ray

        # A Ray of our own (never another user's on this machine): address="local", `workers` CPUs,
        # its own temp dir; Ray picks free ports. Its start-up is inside the timed run, as ours is.
        tmp = tempfile.mkdtemp(prefix="dtray-", dir="/tmp")
        ray.init(address="local", num_cpus=args.workers, include_dashboard=False, log_to_driver=False,
                 _temp_dir=tmp)
        try:
            ex["F"].run()
        finally:
            ray.shutdown()
    else:
        ex["F"].run()  # runs A..E first (depends=)
    seconds = time.time() - t0
    with open(os.path.join(args.work, "datatrove_run.json"), "w", encoding="utf-8") as fh:
        json.dump({"seconds": seconds, "workers": args.workers, "tasks": args.tasks, "executor": args.executor}, fh)
    print(f"datatrove done in {seconds:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
