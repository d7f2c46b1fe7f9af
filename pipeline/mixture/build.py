"""Build a mixture: tokenize kept documents (Ray), plan by token proportions, write Megatron datasets.

Output directory layout:
  OUT/blend.bin, OUT/blend.idx          every sampled document, globally shuffled with the seed
  OUT/sources/<name>.bin/.idx           each source's sampled documents (per_source: true)
  OUT/mixture.json                      per source: unique tokens/documents available, tokens and
                                        documents taken, epochs, achieved vs target proportion; totals
  OUT/tokens/                           tokenized shard cache (removed unless keep_tokens: true)

Documents of a source are ordered by their stable `id` before sampling, so the result depends on
the seed and the set of kept documents, not on how the run happened to split its output files.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline import storage
from pipeline.errors import ConfigError
from pipeline.mixture.megatron import IndexedDatasetWriter
from pipeline.mixture.recipe import LoadedMixture, load_mixture, resolve_inputs
from pipeline.mixture.sampling import BudgetError, MixturePlan, plan_mixture, source_rng
from pipeline.mixture.tokenize import ShardResult, load_tokenizer, plan_tasks, tokenize_tasks


class TokenStore:
    """Every tokenized document of every source: where its tokens are in which shard."""

    def __init__(self, results: list[ShardResult], names: list[str], local_dir: str | None = None):
        # Token shards on an object store are fetched to `local_dir` once, then memory-mapped.
        self.shards = [np.load(_local_copy(r.tokens_path, local_dir), mmap_mode="r") for r in results]
        tables = []
        for i, r in enumerate(results):
            t = storage.read_parquet(r.docs_path)
            tables.append(t.append_column("shard", pa.array(np.full(t.num_rows, i, dtype=np.int32))))
        docs = pa.concat_tables(tables) if tables else None
        self.empty_skipped = sum(r.empty_skipped for r in results)
        self.by_source: dict[str, dict[str, np.ndarray]] = {}
        for name in names:
            if docs is None:
                sel = {"shard": np.zeros(0, np.int32), "start": np.zeros(0, np.int64), "length": np.zeros(0, np.int64)}
            else:
                t = docs.filter(pc.equal(docs.column("name"), name)).sort_by("id")
                sel = {c: t.column(c).to_numpy() for c in ("shard", "start", "length")}
            self.by_source[name] = sel

    def lengths(self, name: str) -> np.ndarray:
        return self.by_source[name]["length"]

    def document(self, name: str, i: int) -> np.ndarray:
        d = self.by_source[name]
        start = int(d["start"][i])
        return self.shards[int(d["shard"][i])][start : start + int(d["length"][i])]


def _local_copy(path: str, local_dir: str | None) -> str:
    if not storage.is_url(path):
        return path
    assert local_dir is not None
    dest = str(Path(local_dir) / storage.basename(path))
    fs, p = storage.filesystem(path)
    fs.get_file(p, dest)
    return dest


def _write(prefix: Path, order: np.ndarray, store: TokenStore, dtype, names: list[str]) -> int:
    """Write the (source index, document index) pairs of `order` as one Megatron dataset."""
    with IndexedDatasetWriter(prefix, dtype) as w:
        for src, doc in order:
            w.add_document(store.document(names[src], int(doc)))
    return w.tokens


def build_mixture(
    m: LoadedMixture,
    out_dir: str | Path,
    run_dir: str | None = None,
    use_ray: bool = True,
    log=print,
    address: str | None = None,
) -> dict:
    """Tokenize, sample and write the mixture described by `m`; returns the mixture.json dict.

    `out_dir` may be an object-store URL: token shards are written there by the Ray tasks (nodes
    share no disk), the Megatron files are built in a local temporary directory and uploaded."""
    out_url = storage.absolute(str(out_dir))
    if storage.is_url(out_url):
        with tempfile.TemporaryDirectory(prefix="refinery-mix-") as tmp:
            report = _build_mixture(m, out_url, Path(tmp) / "out", tmp, run_dir, use_ray, log, address)
            storage.upload_dir(str(Path(tmp) / "out"), out_url)
            return report
    return _build_mixture(m, out_url, Path(out_url), None, run_dir, use_ray, log, address)


def _build_mixture(m: LoadedMixture, out_url: str, out: Path, local_tmp: str | None, run_dir: str | None,
                   use_ray: bool, log, address: str | None) -> dict:
    cfg = m.config
    t0 = time.time()
    tok = load_tokenizer(cfg.tokenizer, cfg.eod)  # fail on a bad tokenizer before any work
    resolved = resolve_inputs(m, run_dir)
    names = list(cfg.sources)
    by_file: dict[str, list[tuple[str, str, str]]] = {}
    for r in resolved:  # in the recipe's order: a document goes to the first bucket it matches
        for f in r.files:
            by_file.setdefault(f, []).append((r.source_value, r.name, r.where or ""))
    tasks = plan_tasks(sorted(by_file.items()))
    tok_dir = storage.join(out_url, "tokens")
    storage.rmtree(tok_dir)
    try:
        return _write_mixture(m, out_url, out, local_tmp, resolved, tasks, tok_dir, tok, use_ray, log, address, t0)
    except BaseException:  # nothing half-written is left: a retry into the same --out starts clean
        storage.rmtree(tok_dir)
        raise


def _write_mixture(m: LoadedMixture, out_url: str, out: Path, local_tmp: str | None, resolved, tasks, tok_dir: str,
                   tok, use_ray: bool, log, address: str | None, t0: float) -> dict:
    cfg = m.config
    names = list(cfg.sources)
    results = tokenize_tasks(tasks, cfg.tokenizer, cfg.eod, tok_dir, cfg.workers, use_ray=use_ray, address=address)
    t_tok = time.time() - t0
    store = TokenStore(results, names, local_tmp)
    for r in resolved:
        if cfg.sources[r.name].weight > 0 and store.lengths(r.name).size == 0:
            raise ConfigError(
                f"{m.path}: {m.prefix}sources.{r.name}: no kept documents with source {r.source_value!r} "
                + (f"matching where {r.where!r} (and no earlier bucket) " if r.where else "") + f"in {r.run}/kept"
            )
    try:
        plan = plan_mixture(
            {n: store.lengths(n) for n in names},
            cfg.weights,
            {n: cfg.epochs_cap(n) for n in names},
            cfg.budget_tokens,
            cfg.seed,
            rescale=cfg.rescale,
            tolerance=cfg.tolerance,
        )
    except BudgetError as e:
        raise BudgetError(f"{m.path}: {m.prefix}budget: {e}") from None
    if plan.note:
        log(f"mixture: {plan.note}")
    report = write_outputs(plan, store, tok, out, cfg.per_source, cfg.seed, names)
    report.update(
        {
            "recipe": m.path,
            "tokenizer": tok.describe(),
            "seed": cfg.seed,
            "format": cfg.format,
            "budget": {
                "requested": "all" if plan.requested_budget is None else plan.requested_budget,
                "effective": plan.budget,
                "rescaled": plan.rescaled,
                "note": plan.note,
            },
            "tolerance": cfg.tolerance,
            "inputs": {r.name: {"run": r.run, "source": r.source_value, "files": len(r.files),
                                **({"where": r.where} if r.where else {})} for r in resolved},
            "empty_documents_skipped": store.empty_skipped,
            "seconds": {"tokenize": round(t_tok, 3), "total": round(time.time() - t0, 3)},
        }
    )
    report["fingerprint"] = fingerprint(m)
    (out / "mixture.json").write_text(json.dumps(report, indent=2) + "\n")
    del store
    if not cfg.keep_tokens:
        storage.rmtree(tok_dir)
    return report


def write_outputs(plan: MixturePlan, store: TokenStore, tok, out: Path, per_source: bool, seed: int, names) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    sources: dict[str, dict] = {}
    picks = []
    for si, name in enumerate(names):
        sp = plan.sources[name]
        picks.append(np.stack([np.full(sp.picks.size, si, np.int64), sp.picks], axis=1))
        entry = {
            "target_proportion": sp.weight,
            "achieved_proportion": plan.achieved(name),
            "unique_tokens": sp.unique_tokens,
            "unique_documents": sp.unique_documents,
            "target_tokens": sp.target_tokens,
            "tokens_taken": sp.tokens_taken,
            "documents_taken": int(sp.picks.size),
            "distinct_documents_taken": int(np.unique(sp.picks).size),
            "epochs": sp.epochs,
            "max_epochs": sp.max_epochs,
        }
        if per_source and sp.picks.size:
            order = sp.picks[source_rng(seed, name).permutation(sp.picks.size)]
            prefix = out / "sources" / name
            pairs = np.stack([np.full(order.size, si, np.int64), order], axis=1)
            _write(prefix, pairs, store, tok.dtype, names)
            entry["dataset"] = str(Path("sources") / name)
        sources[name] = entry
    allp = np.concatenate(picks) if picks else np.zeros((0, 2), np.int64)
    allp = allp[np.random.default_rng(seed).permutation(allp.shape[0])]
    written = _write(out / "blend", allp, store, tok.dtype, names)
    assert written == plan.total_tokens, (written, plan.total_tokens)
    return {
        "sources": sources,
        "totals": {
            "tokens": plan.total_tokens,
            "documents": int(allp.shape[0]),
            "unique_tokens": sum(s.unique_tokens for s in plan.sources.values()),
            "unique_documents": sum(s.unique_documents for s in plan.sources.values()),
            "max_deviation_pp": plan.max_deviation() * 100,
        },
        "outputs": {"blend": "blend", "per_source": per_source},
    }


def mix_after_run(mixture: LoadedMixture | str | None, run_out: str, use_ray: bool = True, log=print,
                  address: str | None = None, unchanged: bool = False) -> dict | None:
    """For `refinery run`: build OUT/mixture when the pipeline recipe ends with `mixture:`.
    `unchanged`: the run's kept documents are those of a finished run, so a mixture already built
    there from the same settings is kept as it is.

    Pass the mixture loaded before the run (`pipeline_mixture(recipe_raw, path)`): the recipe file
    is not opened again (in a Ray job, the working directory it was relative to may be gone)."""
    if isinstance(mixture, str):
        mixture = load_mixture(mixture) if _has_mixture(mixture) else None
    if mixture is None:
        return None
    out = storage.join(run_out, "mixture")
    if unchanged:
        try:
            built = storage.read_json(storage.join(out, "mixture.json"))
        except (OSError, ValueError):
            built = None
        if isinstance(built, dict) and built.get("fingerprint") == fingerprint(mixture):
            log(f"mixture: already built from these settings ({storage.join(out, 'mixture.json')})")
            return built
    return build_mixture(mixture, out, run_dir=run_out, use_ray=use_ray, log=log, address=address)


def fingerprint(m: LoadedMixture) -> str:
    """What a mixture is built from besides the run's kept documents: its settings."""
    import hashlib

    return hashlib.sha256(json.dumps(m.config.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()[:16]


def _has_mixture(recipe_path: str) -> bool:
    from pipeline.yamlfile import read_yaml

    raw = read_yaml(recipe_path)
    return isinstance(raw, dict) and "mixture" in raw


def pipeline_mixture(recipe_raw: dict, recipe_path: str) -> LoadedMixture | None:
    """The `mixture:` section of an already-read pipeline recipe, validated (None when absent)."""
    from pipeline.mixture.recipe import parse_mixture

    if not isinstance(recipe_raw, dict) or "mixture" not in recipe_raw:
        return None
    return parse_mixture(recipe_raw, recipe_path)


def mixture_out_dir(m: LoadedMixture, out: str | None) -> tuple[str, str | None]:
    """(where the mixture goes, the run dir for embedded sources); local paths or URLs."""
    if m.embedded:
        run = out or m.recipe_output
        if not run:
            raise ConfigError(f"{m.path}: mixture: pass --out OUT, the pipeline run's output directory")
        run = storage.normalize(run)
        return storage.join(run, "mixture"), run
    if not out:
        raise ConfigError(f"{m.path}: pass --out DIR for the mixture's output")
    out = storage.normalize(out)
    # Without an earlier mixture.json nothing there is known to be the mixture's, not even a `tokens/`
    # (it is deleted and rebuilt): any entry refuses the folder.
    theirs = storage.listdir(out) if storage.isdir(out) else []
    if theirs and not storage.exists(storage.join(out, "mixture.json")):
        raise ConfigError(f"{m.path}: --out {out!r} holds files the mixture did not write ({', '.join(theirs[:3])}"
                          f"{', ...' if len(theirs) > 3 else ''}); choose a new or empty directory")
    return out, None


# What a mixture writes in its output; a standalone mixture's --out holds only these, or an earlier
# mixture.json, because the token cache (OUT/tokens) is deleted and the Megatron files replaced.
MIX_NAMES = ("tokens", "blend.bin", "blend.idx", "sources", "mixture.json")


def summary_lines(report: dict) -> list[str]:
    lines = [f"{'source':<14}{'target':>8}{'achieved':>10}{'unique tok':>14}{'taken tok':>14}{'epochs':>8}{'docs':>9}"]
    for n, s in report["sources"].items():
        lines.append(
            f"{n:<14}{s['target_proportion']:>8.4f}{s['achieved_proportion']:>10.4f}{s['unique_tokens']:>14,}"
            f"{s['tokens_taken']:>14,}{s['epochs']:>8.3f}{s['documents_taken']:>9,}"
        )
    t = report["totals"]
    lines.append(f"{'total':<14}{1:>8.4f}{1:>10.4f}{t['unique_tokens']:>14,}{t['tokens']:>14,}{'':>8}{t['documents']:>9,}")
    return lines


# -- CLI ---------------------------------------------------------------------------------------


def add_mix_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "mix",
        help="build the tokenized mixture (Megatron .bin/.idx + mixture.json) from cleaned runs",
        description="Build the tokenized mixture from a pipeline recipe's `mixture:` section "
        "(--out is the run's output; the mixture goes to OUT/mixture) or a standalone mixture "
        "recipe (--out is the mixture's output directory).",
    )
    p.add_argument("recipe")
    p.add_argument("--out", help="run output dir (pipeline recipe) or mixture output dir (standalone)")
    p.add_argument("--workers", type=int, help="Ray CPUs for tokenization (default: recipe or all)")
    p.add_argument("--no-ray", action="store_true", help="tokenize in this process")
    p.add_argument("--address", help="Ray cluster address (default: RAY_ADDRESS, else a new local Ray)")
    p.set_defaults(func=main_mix)
    return p


def main_mix(args: argparse.Namespace) -> int:
    try:
        m = load_mixture(args.recipe)
        if getattr(args, "workers", None):
            m.config.workers = args.workers
        out, run = mixture_out_dir(m, args.out)
        report = build_mixture(m, out, run_dir=run, use_ray=not getattr(args, "no_ray", False),
                               address=getattr(args, "address", None))
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for line in summary_lines(report):
        print(line)
    print(f"wrote {out}/blend.bin/.idx and {out}/mixture.json")
    return 0
