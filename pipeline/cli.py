"""The `refinery` command line. Exit codes: 0 success, 2 bad configuration or input, 1 failure."""
from __future__ import annotations

import argparse
import gc
import os
import signal
import sys
import threading
import time
from pipeline.errors import ConfigError, RunError


def cmd_run(args: argparse.Namespace) -> int:
    from pipeline import storage
    from pipeline.mixture.build import mix_after_run, pipeline_mixture
    from pipeline.engine.recipe import load_recipe
    from pipeline.engine.ray_pool import stopping_ray
    from pipeline.engine.runner import run

    if args.workers is not None and args.workers < 1:
        raise ConfigError(f"--workers must be at least 1 (got {args.workers})")
    recipe = load_recipe(args.recipe, output=args.out)
    # Read now: in a Ray job the recipe's relative path may be gone by the time the run ends.
    mixture = pipeline_mixture(recipe.raw, args.recipe)
    result = run(recipe, address=args.address, workers=args.workers, executor=_executor(args),
                 overwrite=args.overwrite, progress=not args.quiet)
    print(summary_table(result.ledger))
    for f in sorted(set(result.ledger.unreadable_files) - set(result.ledger.readable_files)):
        print(f"unreadable file: {f}")
    if result.complete:
        print(f"already complete: {result.out} (nothing to do; --overwrite runs it again)")
    else:
        print(f"done in {result.seconds:.1f}s with {result.workers} worker(s): {result.out}")
    bugs = _internal_errors(recipe, result.ledger)
    unread = _nothing_read(result.ledger, result.out)
    mixed = 0
    if unread is None:  # a run that read nothing has nothing to mix: its own failure says why
        mixed = _mixture(lambda: mix_after_run(mixture, result.out, use_ray=result.used_ray, address=args.address,
                                               unchanged=result.complete), args.recipe, result.out)
    with stopping_ray():  # Ray is done with; the report needs none of it
        if not result.resumed or not storage.exists(storage.join(result.out, "report", "report.md")):
            code = _report(result.out)
            if code:
                return code
    if bugs or unread:
        print(f"refinery: run failed: {bugs or unread}", file=sys.stderr)
        return 1
    return mixed


def summary_table(ledger) -> str:
    """The end-of-run table: documents and bytes per stage, with the top rejection reasons."""
    rows = [("stage", "docs in", "kept", "rejected", "MB in", "MB kept", "top reasons")]
    for stage in ledger.stage_order:
        c = ledger.total(stage)
        top = sorted(c.rejected.items(), key=lambda kv: -kv[1][0])[:3]
        rows.append((
            stage, f"{c.docs_in:,}", f"{c.kept:,}", f"{c.rejected_docs:,}",
            f"{c.bytes_in / 1e6:.2f}", f"{c.kept_bytes / 1e6:.2f}",
            ", ".join(f"{r} {d}" for r, (d, _) in top),
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for j, r in enumerate(rows):
        lines.append("  ".join(v.ljust(w) if i in (0, 6) else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths))))
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _executor(args: argparse.Namespace) -> str:
    """`--executor`, or one of its aliases (`--no-ray`, `--processes`, `--ray`); `auto` when none is
    given. Two that name different executors are one ConfigError line."""
    asked = [(f"--executor {args.executor}", args.executor)] if args.executor else []
    asked += [(flag, name) for flag, name in (("--no-ray", "local"), ("--processes", "processes"), ("--ray", "ray"))
              if getattr(args, flag[2:].replace("-", "_"))]
    other = next((flag for flag, name in asked if name != asked[0][1]), None)
    if other is not None:
        raise ConfigError(f"{asked[0][0]} and {other}: choose one")
    return asked[0][1] if asked else "auto"


def _mixture(build, recipe: str, out: str) -> int:
    """The mixture after a run: a failure there (no kept documents for a bucket, a budget the run
    cannot meet) is said in one line and exit code 1, after the report; the run's outputs stay."""
    try:
        build()
    except ConfigError as exc:
        print(f"refinery: the mixture failed: {exc} (the run's outputs are complete; fix the mixture and"
              f" run `refinery mix {recipe} --out {out}`)", file=sys.stderr)
        return 1
    return 0


def _nothing_read(ledger, out: str) -> str | None:
    """The failure message when inputs were found but every one was rejected while reading (links
    out of an input root, unreadable files, ...): the run is written, but it holds nothing."""
    read = ledger.total("read")
    if read.docs_in == 0 or read.kept:
        return None
    reasons = sorted(read.rejected.items(), key=lambda kv: -kv[1][0])
    top = ", ".join(f"{k} {v[0]:,}" for k, v in reasons[:3])
    return (f"every one of the {read.docs_in:,} input document(s) was rejected while reading ({top}); "
            f"see {out}/rejects/read")


def _internal_errors(recipe, ledger) -> str | None:
    """Print each source's count of refinery bugs met while reading (`internal_error` rows, kept
    apart from bad input); the failure message when a source's rate is over its threshold."""
    failed = None
    for name, src in recipe.sources.items():
        c = ledger.counts("read", name)
        n = c.rejected.get("internal_error", [0, 0])[0]
        if not n:
            continue
        print(f"refinery: {n} internal error(s) reading source {name}: refinery bugs, not bad input"
              f" (rejects/read, reason internal_error)", file=sys.stderr)
        rate, limit = n / max(c.docs_in, 1), src.config.max_internal_error_rate
        if rate > limit and failed is None:
            failed = (f"source {name}: internal-error rate {rate:.4g} is over its max_internal_error_rate"
                      f" {limit:g}")
    return failed


def _report(out: str) -> int:
    """The run's report; its failure leaves the run's outputs complete but is said on the terminal
    and in the exit code (1), and so is a report without a projection."""
    import logging

    from pipeline.report.build import write_report

    t, cpu = time.time(), time.process_time()
    try:
        rep = write_report(out)
        # CPU: of this process, so with Ray's stop when it runs beside (`stopping_ray`)
        logging.getLogger("refinery").info("report took %.1fs (%.1f CPU-s)", time.time() - t, time.process_time() - cpu)
    except Exception as exc:
        logging.getLogger("refinery").exception("writing the report failed")
        print(f"refinery: the report failed: {type(exc).__name__}: {exc} (the run's outputs are complete;"
              f" `refinery report {out}` retries)", file=sys.stderr)
        return 1
    if rep.projection is None:
        print("refinery: warning: the report has no projection (report.md says why)", file=sys.stderr)
    return 0


def cmd_retune(args: argparse.Namespace) -> int:
    from pipeline.engine.retune import retune
    from pipeline.mixture.build import mix_after_run

    if not args.set and not args.recipe:
        raise ConfigError("retune: give --set STAGE.KEY=VALUE (repeatable) or --recipe FILE")
    result = retune(args.run, args.set or [], args.out, recipe_file=args.recipe, overwrite=args.overwrite,
                    allow_inexact=args.allow_inexact)
    print(summary_table(result.ledger))
    print(f"retuned in {result.seconds:.1f}s: {result.changed:,} documents changed path, "
          f"{result.recomputed:,} shown to a stage for the first time or re-resolved: {result.out}")
    if result.inexact:
        print(f"warning: {len(result.inexact):,} documents cannot be re-decided exactly (their text was rewritten "
              f"after the stage that now rejects them; see {result.out}/retune.json)")
    mixed = _mixture(lambda: mix_after_run(result.recipe_path, result.out, use_ray=False), result.recipe_path, result.out)
    return _report(result.out) or mixed  # as `refinery run`: a failed report or mixture is one line and exit 1


def cmd_validate(args: argparse.Namespace) -> int:
    from pipeline.engine.recipe import load_recipe

    recipe = load_recipe(args.recipe)
    print(f"{args.recipe}: ok ({len(recipe.sources)} sources, {len(recipe.stages)} stages)")
    return 0


def cmd_stages(args: argparse.Namespace) -> int:
    from stages.registry import available, describe

    found = available()
    if args.name is not None and args.name not in found:
        raise ConfigError(f"unknown stage {args.name!r} (known: {', '.join(found)})")
    for i, (name, cls) in enumerate(found.items() if args.name is None else [(args.name, found[args.name])]):
        print(("\n" if i else "") + "\n".join(stage_text(describe(cls))))
    return 0


def stage_text(info) -> list[str]:
    """One stage's reasons, signals and config keys (default and description), as lines."""
    import textwrap

    from pydantic_core import PydanticUndefined

    def show(v) -> str:
        return "required" if v is PydanticUndefined else "null" if v is None else str(v).lower() if isinstance(v, bool) else str(v)

    def table(rows: list[tuple[str, str]]) -> list[str]:
        """Two columns; a left cell too long for the column puts its description on the next line."""
        w = min(max((len(a) for a, _ in rows), default=0), 44)
        out = []
        for a, d in rows:
            if len(a) > w and d:
                out += [f"    {a}", f"    {'':{w}s}  {d}"]
            else:
                out.append(f"    {a:{w}s}  {d}".rstrip())
        return out or ["    -"]

    reasons = textwrap.wrap(", ".join(info.reasons) or "-", 100, initial_indent="  reasons: ", subsequent_indent="    ")
    out = [f"{info.name} ({info.kind})", *reasons, "  signals:"]
    out += table([(f"{n} ({t})", d) for n, t, d in info.signals])
    out.append("  config:")
    out += table([(f"{k.key}: {show(k.default)}", k.description) for k in info.config])
    return out


def cmd_train_toxicity(args: argparse.Namespace) -> int:
    from pipeline.train.toxicity import main as train

    return train(args.args)


def cmd_train_quality(args: argparse.Namespace) -> int:
    from pipeline.train.quality import main as train

    return train(args.args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="refinery",
        description="Clean, deduplicate and mix LLM pretraining data on Ray, from one YAML recipe.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", help="run a recipe: read sources, run the stages, write kept/rejects/ledger")
    p.add_argument("recipe", help="path to the YAML recipe")
    p.add_argument("--out", help="output directory (overrides the recipe's `output`)")
    p.add_argument("--address", help="Ray cluster address (default: RAY_ADDRESS, else an embedded local Ray)")
    p.add_argument("--workers", type=int, help="shard workers (default: one per CPU)")
    p.add_argument("--executor", choices=("auto", "local", "processes", "ray"),
                   help="who runs the workers: local (this process), processes (local processes without Ray; "
                        "not with --address), ray (Ray actors, embedded or --address), auto (the default: local "
                        "for a small local input under 4 MiB, else ray)")
    p.add_argument("--no-ray", action="store_true", help="--executor local")
    p.add_argument("--processes", action="store_true", help="--executor processes")
    p.add_argument("--ray", action="store_true", help="--executor ray")
    p.add_argument("--overwrite", action="store_true", help="replace refinery's earlier run in the output (deletes only what refinery wrote)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("retune", help="re-decide a finished run from its stored signals with new thresholds")
    p.add_argument("run", help="a finished run's output directory")
    p.add_argument("--set", action="append", metavar="STAGE.KEY=VALUE",
                   help="a new threshold, e.g. quality.gopher_quality.min_stop_words=1 (repeatable)")
    p.add_argument("--recipe", help="a recipe holding the new settings instead of --set (same stages and sources)")
    p.add_argument("--out", required=True, help="output directory of the retuned run")
    p.add_argument("--overwrite", action="store_true", help="replace an earlier retune in --out")
    p.add_argument("--allow-inexact", action="store_true",
                   help="write the run even if some rejected documents can only carry their rewritten text")
    p.set_defaults(func=cmd_retune)

    p = sub.add_parser("validate", help="check a recipe and its input paths without running it")
    p.add_argument("recipe")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("stages", help="the stages: reasons, signals, config keys with defaults and descriptions")
    p.add_argument("name", nargs="?", help="only this stage")
    p.set_defaults(func=cmd_stages)

    p = sub.add_parser("train-toxicity", add_help=False,
                       help="retrain the shipped toxicity classifier on ../shared/corpora/toxicity (seeded)")
    p.add_argument("args", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_train_toxicity)

    p = sub.add_parser("train-quality", add_help=False,
                       help="train a fastText quality classifier: POSITIVES NEGATIVES (or --default: the shipped model)")
    p.add_argument("args", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_train_quality)

    from pipeline.mixture.build import add_mix_parser
    from pipeline.planner import add_plan_parser
    from pipeline.report.build import register as add_report_parser

    add_mix_parser(sub)
    add_plan_parser(sub)
    add_report_parser(sub)
    return parser


INTERRUPTED = "refinery: interrupted; rerun to resume"


_SIGNALLED: list[int] = []  # the signals this process received, whatever became of their exception


def _on_signal(signum, frame) -> None:
    """Unwinds like Ctrl-C. The signal is also noted: inside a native wait (Ray's `ray.wait`) the
    exception raised here comes back as another one (Ray: SystemExit(1)), and the exit code must
    still be the signal's."""
    _SIGNALLED.append(signum)
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + signum)


def _interrupted(code: int) -> int:
    """One line, the shell's exit code for the signal; a second signal during clean-up is ignored.
    Shards finished so far have their records, so a rerun resumes after them."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    print(INTERRUPTED, file=sys.stderr, flush=True)
    return code


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    _SIGNALLED.clear()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_signal)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # an ignored SIGINT stays ignored
            signal.signal(signal.SIGINT, _on_signal)
    try:
        code = _main(argv)
    except BaseException as exc:
        if _SIGNALLED:
            return _interrupted(128 + _SIGNALLED[0])
        if isinstance(exc, KeyboardInterrupt):
            return _interrupted(130)
        if isinstance(exc, SystemExit) and exc.code in (signal.SIGTERM, 128 + signal.SIGTERM):
            return _interrupted(128 + signal.SIGTERM)
        raise
    return _interrupted(128 + _SIGNALLED[0]) if _SIGNALLED else code


def _main(argv: list[str]) -> int:
    if argv[:1] == ["train-toxicity"]:  # its options belong to the trainer, --help included
        return cmd_train_toxicity(argparse.Namespace(args=argv[1:]))
    if argv[:1] == ["train-quality"]:
        return cmd_train_quality(argparse.Namespace(args=argv[1:]))
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as exc:
        print(f"refinery: error: {exc}", file=sys.stderr)
        return 2
    except RunError as exc:
        print(f"refinery: run failed: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `refinery stages | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0
    except OSError as exc:  # disk full, permission denied, ...: no shard was marked complete
        where = f": {exc.filename}" if exc.filename else ""
        print(f"refinery: output error: {exc.strerror or exc}{where} (rerun to resume)", file=sys.stderr)
        return 1
    except Exception as exc:
        if not is_storage_error(exc):
            raise
        print(f"refinery: storage error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


# Packages whose exceptions mean an object store could not be reached or refused the request (no
# endpoint, bad credentials, no such bucket): the user's setup, not a refinery bug. They are not
# OSErrors, so they would otherwise reach the user as a traceback.
STORAGE_PACKAGES = ("botocore", "aiobotocore", "boto3", "s3fs", "gcsfs", "google.auth", "google.api_core",
                    "google.cloud", "aiohttp", "fsspec")


def is_storage_error(exc: BaseException) -> bool:
    return any((c.__module__ + ".").startswith(tuple(p + "." for p in STORAGE_PACKAGES)) for c in type(exc).__mro__)


def entry() -> None:
    """The `refinery` command (and `python -m pipeline.cli`): `main`, then Python's ordinary exit
    with what is alive frozen out of the final collections (`gc.freeze`): the interpreter's teardown
    otherwise rescans every object (the language models, spaCy's vocabulary, Arrow buffers) before
    freeing it, 1.6-2.0 s after the stages' models were loaded, 0.13-0.23 s frozen
    (docs/measurements/2026-11-28-engine.md). `main` itself returns, for callers in the same process."""
    code = main()
    code = 0 if code is None else code if isinstance(code, int) else 1
    gc.freeze()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):  # `refinery stages | head`; a closed stream: nothing more to say
            _quiet(stream)
        except OSError as e:  # output that could not be written (a full disk): one line, not a traceback
            _quiet(stream)
            try:
                os.write(2, f"refinery: error: could not write the output: {e.strerror or e}\n".encode())
            except OSError:
                pass
            code = code or 1
    sys.exit(code)


def _quiet(stream) -> None:
    """A standard stream that cannot be written is not flushed again at exit (Python would print
    the error a second time): it is dropped."""
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is stream:
            setattr(sys, name, None)


if __name__ == "__main__":
    entry()
