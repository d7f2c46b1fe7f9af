"""refinery side by side with Data-Juicer, Dolma and NeMo Curator on the same JSONL input.

Each peer is installed in its own virtualenv under /work/peers/<name> (never refinery's), from the
registry only; nothing is downloaded at run time: the fastText language model every tool uses is
lid.176 as refinery ships it (stages/models). What each runs, with
`--workers` processes:

  refinery      langid (en) -> quality (Gopher repetition + quality, C4, FineWeb) -> MinHash near
                dedup -> exact dedup; `refinery run` (embedded Ray above 4 MiB of input)
  Data-Juicer   language_id_score_filter (en) -> words_num, alphanumeric, character_repetition,
                word_repetition, special_characters filters -> document_deduplicator (exact) ->
                document_minhash_deduplicator; `dj-process`, standalone executor, np = workers
  Dolma         `dolma tag` (fastText en, gopher_v1, c4_v1) -> `dolma dedupe` (Bloom filter over
                the whole text: exact) -> `dolma mix` with Gopher's thresholds (but its duplicate-
                line rules: see GOPHER) and the language score as exclusion rules; Dolma has no
                near-duplicate (MinHash) step
  NeMo Curator  JsonlReader -> ScoreFilter(FastTextLangId en) -> NeMo's heuristic filters
                (word count, Gopher-like repetition, symbols, URLs, ...) -> JsonlWriter on its
                default executor (Xenna on Ray); its exact and fuzzy dedup need a GPU (cuDF)

and refinery again with the kinds of work each peer does (`--tools refinery-as-...`), so the ratio
compares like with like: `refinery-as-dj` langid -> quality without the classifier -> MinHash ->
exact (Data-Juicer's LID, heuristic filters, exact and MinHash dedup); `refinery-as-dolma` langid ->
quality with Gopher and C4 only, no classifier -> exact (Dolma's LID, gopher_v1, c4_v1, Bloom exact
dedup); `refinery-as-nemo` langid -> quality without the classifier, no dedup (NeMo's LID and
heuristic filters). The rules still differ in detail (refinery's reproduce datatrove's, with
spaCy's word tokenisation); the stage kinds and the documents they see are the same.

CPU time is the whole process tree's: sampled from /proc every 0.5 s (every descendant, Ray's
daemons included) and, independently, the rusage of the children the tool waited for
(`/usr/bin/time`); the larger of the two is reported (both are lower bounds). Start-up is measured
separately as the same command on a 20-document input; "above start-up" divides the documents by
the big run's CPU minus that. Tools run one after the other, in `--rounds` alternated rounds; the
load average is printed with each run because the machine is shared.

    PYTHONPATH=. python benchmarks/make_pipeline_input.py --mb 56 --shards 8 --jsonl --out /tmp/refinery-bench/jsonl56
    PYTHONPATH=. python benchmarks/peers.py --input /tmp/refinery-bench/jsonl56 --workers 2
"""
from __future__ import annotations

import argparse
import functools
import glob
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from pipeline_vs_datatrove import ProcMonitor  # noqa: E402

PY = sys.executable
PEERS = Path(os.environ.get("REFINERY_PEERS", "/work/peers"))
LID_SCORE = 0.65  # fastText P(en) to keep, every tool
TOOLS = ("refinery", "data-juicer", "dolma", "nemo-curator")
# refinery doing the kinds of work a peer does: (peer, stage lines of the recipe)
_NO_CLASSIFIER = ["  - stage: quality", "    classifier: null"]
EQUAL_WORK = {
    "refinery-as-dj": ("data-juicer", _NO_CLASSIFIER + ["  - stage: minhash_dedup", "  - stage: exact_dedup"]),
    "refinery-as-dolma": ("dolma", ["  - stage: quality", "    classifier: null", "    fineweb: null",
                                    "  - stage: exact_dedup"]),
    "refinery-as-nemo": ("nemo-curator", _NO_CLASSIFIER),
}
DEFAULT_STAGES = ["  - stage: quality", "  - stage: minhash_dedup", "  - stage: exact_dedup"]


def lid_model() -> str:
    from stages.langid import bundled_model_path

    return str(bundled_model_path())


@dataclass
class Step:
    name: str
    cmd: list[str]
    env: dict = field(default_factory=dict)
    cwd: str | None = None


@dataclass
class Result:
    tool: str
    docs: int
    cpu: float = 0.0
    wall: float = 0.0
    ok: bool = True
    steps: dict = field(default_factory=dict)  # step -> CPU s
    stage_times: dict = field(default_factory=dict)  # what the tool itself reports per stage
    load: str = ""
    kept: set = field(default_factory=set)
    note: str = ""


def loadavg() -> str:
    with open("/proc/loadavg") as fh:
        return "/".join(fh.read().split()[:3])


def run_step(step: Step, log_path: str) -> tuple[float, float, bool]:
    """(CPU s of the whole process tree, wall s, ok)."""
    env = dict(os.environ)
    env.pop("RAY_ADDRESS", None)
    env.update(step.env)
    tfile = log_path + ".rusage"
    cmd = ["/usr/bin/time", "-f", "%U %S", "-o", tfile] + step.cmd
    with open(log_path, "w") as log:
        t0 = time.time()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=step.cwd or str(REPO))
        mon = ProcMonitor(proc.pid, include_root=False)  # /usr/bin/time itself uses nothing
        mon.start()
        rc = proc.wait()
        wall = time.time() - t0
        mon.stop()
    rusage = 0.0
    try:
        with open(tfile) as fh:
            last = fh.read().strip().splitlines()[-1].split()
            rusage = float(last[0]) + float(last[1])
    except (OSError, IndexError, ValueError):
        pass
    return max(mon.cpu_seconds, rusage), wall, rc == 0


# -- inputs -------------------------------------------------------------------------------------
def input_files(input_dir: str) -> list[str]:
    """The JSONL shards of the input (make_pipeline_input.py's manifest.jsonl is not a shard)."""
    return [f for f in sorted(glob.glob(os.path.join(input_dir, "*.jsonl"))) if Path(f).name != "manifest.jsonl"]


def input_docs(input_dir: str) -> list[dict]:
    docs = []
    for f in input_files(input_dir):
        with open(f, encoding="utf-8") as fh:
            docs += [json.loads(line) for line in fh if line.strip()]
    return docs


def write_tiny(input_dir: str, out_dir: str, n: int) -> str:
    os.makedirs(out_dir, exist_ok=True)
    docs = input_docs(input_dir)[:n]
    with open(os.path.join(out_dir, "tiny.jsonl"), "w", encoding="utf-8") as fh:
        for d in docs:
            fh.write(json.dumps(d, ensure_ascii=False) + "\n")
    return out_dir


# -- refinery -----------------------------------------------------------------------------------
def refinery_steps(input_dir: str, work: str, workers: int, stages: list[str] = DEFAULT_STAGES) -> list[Step]:
    """`stages`: the recipe's lines after langid (default: quality, MinHash, exact; EQUAL_WORK)."""
    out = os.path.join(work, "out")
    recipe = os.path.join(work, "recipe.yaml")
    with open(recipe, "w") as fh:
        fh.write("\n".join([
            "name: peers", f"output: {out}", f"ray: {{num_workers: {workers}}}", "sources:", "  web:",
            "    kind: jsonl", f"    paths: {json.dumps(input_files(input_dir))}", "stages:",
            "  - stage: langid", "    languages: [en]", f"    min_score: {LID_SCORE}", *stages]) + "\n")
    env = {"PYTHONPATH": str(REPO), "RAY_TMPDIR": os.path.join(work, "ray")}
    os.makedirs(env["RAY_TMPDIR"], exist_ok=True)
    return [Step("run", [PY, "-m", "pipeline.cli", "run", recipe, "--overwrite", "--quiet",
                         "--workers", str(workers)], env)]


def refinery_kept(work: str) -> set[str]:
    import pyarrow.parquet as pq

    ids = set()
    for f in glob.glob(os.path.join(work, "out", "kept", "**", "*.parquet"), recursive=True):
        for m in pq.read_table(f, columns=["metadata"]).column("metadata").to_pylist():
            ids.add(json.loads(m)["id"])
    return ids


def refinery_stages(work: str) -> dict:
    try:
        with open(os.path.join(work, "out", "ledger.json")) as fh:
            led = json.load(fh)
    except OSError:
        return {}
    out = {}
    for st in led.get("stages", []):
        tot = st.get("total", {})
        out[st["stage"]] = (tot.get("cpu_seconds"), tot.get("docs_in", 0) - tot.get("skipped", 0))
    for name, d in (led.get("global_steps") or {}).items():
        out[f"{name} (global step)"] = (d.get("cpu_seconds"), None)
    return out


# -- Data-Juicer ----------------------------------------------------------------------------------
def dj_steps(input_dir: str, work: str, workers: int) -> list[Step]:
    models = os.path.join(work, "models")
    os.makedirs(models, exist_ok=True)
    link = os.path.join(models, "lid.176.bin")  # the name Data-Juicer looks for in its model cache
    if not os.path.exists(link):
        os.symlink(lid_model(), link)
    merged = os.path.join(work, "input.jsonl")  # one file: Data-Juicer's standalone reader takes a path
    with open(merged, "w", encoding="utf-8") as fh:
        for f in input_files(input_dir):
            with open(f, encoding="utf-8") as src:
                shutil.copyfileobj(src, fh)
    cfg = os.path.join(work, "dj.yaml")
    with open(cfg, "w") as fh:
        fh.write(f"""project_name: refinery-peers
dataset_path: {merged}
export_path: {work}/out/kept.jsonl
np: {workers}
text_keys: text
use_cache: false
open_tracer: false
process:
  - language_id_score_filter: {{lang: en, min_score: {LID_SCORE}}}
  - words_num_filter: {{min_num: 50, max_num: 100000}}
  - alphanumeric_filter: {{min_ratio: 0.25}}
  - character_repetition_filter: {{rep_len: 10, max_ratio: 0.5}}
  - word_repetition_filter: {{rep_len: 10, max_ratio: 0.2}}
  - special_characters_filter: {{max_ratio: 0.25}}
  - document_deduplicator: {{lowercase: false}}
  - document_minhash_deduplicator: {{jaccard_threshold: 0.8}}
""")
    env = {"DATA_JUICER_MODELS_CACHE": models, "HF_DATASETS_CACHE": os.path.join(work, "hf"),
           "HF_HUB_OFFLINE": "1", "RAY_TMPDIR": os.path.join(work, "ray")}
    return [Step("run", [str(PEERS / "data-juicer" / "bin" / "dj-process"), "--config", cfg], env, work)]


def jsonl_ids(pattern: str) -> set[str]:
    ids = set()
    for f in glob.glob(pattern, recursive=True):
        opener = gzip.open if f.endswith(".gz") else open
        with opener(f, "rt", encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    ids.add(json.loads(line)["id"])
    return ids


def dj_stages(work: str) -> dict:
    out = {}
    try:
        text = open(os.path.join(work, "run.log"), encoding="utf-8", errors="replace").read()
    except OSError:
        return out
    for op, secs in re.findall(r"OP \[(\w+)\] Done in ([\d.]+)s", text):
        out[op] = (None, float(secs))
    return out


# -- Dolma --------------------------------------------------------------------------------------
DOLMA_TAGGER_MODULE = '''"""fastText LID for Dolma with a local model file (no download at run time)."""
import os

from dolma import add_tagger
from dolma.taggers.language import FastTextEnglishLanguageDocumentTagger


@add_tagger("ft_lang_id_en_doc_local")
class LocalFastTextEnglish(FastTextEnglishLanguageDocumentTagger):
    MODEL_PATH = os.environ["REFINERY_PEER_LID"]
'''

GOPHER = [  # Gopher's thresholds (as in Dolma's own configurations), on gopher_v1's attributes
    ("word_count", "<", 50), ("word_count", ">", 100000), ("median_word_length", "<", 3),
    ("median_word_length", ">", 10), ("symbol_to_word_ratio", ">", 0.1),
    ("fraction_of_words_with_alpha_character", "<", 0.8), ("required_word_count", "<", 2),
    ("fraction_of_lines_starting_with_bullet_point", ">", 0.9),
    ("fraction_of_lines_ending_with_ellipsis", ">", 0.3),
    # not ("fraction_of_duplicate_lines", ">", 0.3) nor its character version: gopher_v1 splits on
    # every "\n", so the blank lines between paragraphs count as duplicate lines, and it would drop
    # 60 of 73 English documents of a 300-document sample (Gopher and datatrove split on "\n+")
    ("fraction_of_characters_in_most_common_2grams", ">", 0.2),
    ("fraction_of_characters_in_most_common_3grams", ">", 0.18),
    ("fraction_of_characters_in_most_common_4grams", ">", 0.16),
] + [(f"fraction_of_characters_in_duplicate_{n}grams", ">", t)
     for n, t in zip(range(5, 11), (0.15, 0.14, 0.13, 0.12, 0.11, 0.10))]


def dolma_steps(input_dir: str, work: str, workers: int) -> list[Step]:
    docs = os.path.join(work, "data", "documents")
    os.makedirs(docs, exist_ok=True)
    for f in input_files(input_dir):  # Dolma's layout (not timed)
        with open(f, encoding="utf-8") as src, gzip.open(os.path.join(docs, Path(f).name + ".gz"), "wt",
                                                         encoding="utf-8", compresslevel=1) as dst:
            for line in src:
                r = json.loads(line)
                dst.write(json.dumps({"id": r["id"], "text": r["text"], "source": "bench",
                                      "added": "2024-05-18T00:00:00Z", "created": "2024-05-18T00:00:00Z",
                                      "metadata": {"url": r.get("url")}}, ensure_ascii=False) + "\n")
    with open(os.path.join(work, "peer_taggers.py"), "w") as fh:
        fh.write(DOLMA_TAGGER_MODULE)
    n_docs = sum(1 for _ in input_docs(input_dir))
    dedupe = os.path.join(work, "dedupe.json")
    with open(dedupe, "w") as fh:
        json.dump({"documents": [f"{docs}/*.jsonl.gz"], "processes": workers,
                   "dedupe": {"name": "dedupe_docs", "skip_empty": True,
                              "documents": {"attribute_name": "bff_duplicate_docs", "key": "$.text"}},
                   "bloom_filter": {"file": os.path.join(work, "bloom.bin"), "read_only": False,
                                    "estimated_doc_count": max(1000, 2 * n_docs),
                                    "desired_false_positive_rate": 1e-6}}, fh)
    lang = "bench__ft_lang_id_en_doc_local__en"
    excl = [f"$.attributes[?(@.{lang} && @.{lang}[0] && @.{lang}[0][2] < {LID_SCORE})]"]
    for name, op, t in GOPHER:
        a = f"bench__gopher_v1__{name}"
        excl.append(f"$.attributes[?(@.{a} && @.{a}[0] && @.{a}[0][2] {op} {t})]")
    excl.append("$.attributes[?(@.bff_duplicate_docs && @.bff_duplicate_docs[0] && @.bff_duplicate_docs[0][2] >= 1.0)]")
    mix = os.path.join(work, "mix.json")
    with open(mix, "w") as fh:
        json.dump({"processes": workers, "streams": [{
            "name": "bench", "documents": [f"{docs}/*.jsonl.gz"], "attributes": ["bench", "dedupe_docs"],
            "output": {"path": os.path.join(work, "out"), "max_size_in_bytes": 1 << 30},
            "filter": {"exclude": excl}}]}, fh)
    dolma = str(PEERS / "dolma" / "bin" / "dolma")
    env = {"REFINERY_PEER_LID": lid_model(), "PYTHONPATH": work}
    return [
        Step("tag (LID, gopher_v1, c4_v1)", [dolma, "tag", "--documents", f"{docs}/*.jsonl.gz", "--experiment", "bench",
                                            "--taggers", "ft_lang_id_en_doc_local", "gopher_v1", "c4_v1",
                                            "--tagger_modules", "peer_taggers", "--processes", str(workers)], env, work),
        Step("dedupe (Bloom filter, exact)", [dolma, "-c", dedupe, "dedupe"], env, work),
        Step("mix (apply rules)", [dolma, "-c", mix, "mix"], env, work),
    ]


# -- NeMo Curator ---------------------------------------------------------------------------------
NEMO_SCRIPT = '''"""NeMo Curator CPU path: JSONL -> fastText LID (en) -> heuristic filters -> JSONL."""
import json
import os
import sys

import ray

inp, out, lid, workers, tmp, score = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], float(sys.argv[6])
import socket
with socket.socket() as _s:  # Xenna's monitor needs the dashboard (state API); a free port for it
    _s.bind(("127.0.0.1", 0))
    _port = _s.getsockname()[1]
# Xenna asks the state API for up to 40,000 actors; Ray's API server allows 10,000 unless told.
os.environ.setdefault("RAY_MAX_LIMIT_FROM_API_SERVER", "40000")
ray.init(address="local", num_cpus=workers, include_dashboard=True, dashboard_port=_port, _temp_dir=tmp)
# Xenna's monitor lists actors through the state API with no address: name this instance, or it
# refuses when other Ray instances run on the machine ("Found multiple active Ray instances").
os.environ["RAY_ADDRESS"] = ray.get_runtime_context().gcs_address

from nemo_curator.pipeline import Pipeline
from nemo_curator.stages.text.filters import ScoreFilter
from nemo_curator.stages.text.filters.fasttext.fasttext_filters import FastTextLangId
from nemo_curator.stages.text.filters.heuristic.repetition import (
    RepeatedLinesFilter, RepeatedParagraphsFilter, RepeatingDuplicateNGramsFilter, RepeatingTopNGramsFilter)
from nemo_curator.stages.text.filters.heuristic.string import (
    BoilerPlateStringFilter, BulletsFilter, EllipsisFilter, LongWordFilter, MeanWordLengthFilter,
    NonAlphaNumericFilter, NumbersFilter, ParenthesesFilter, PunctuationFilter, SymbolsToWordsFilter,
    UrlsFilter, WhiteSpaceFilter, WordCountFilter)
from nemo_curator.stages.text.io.reader import JsonlReader
from nemo_curator.stages.text.io.writer import JsonlWriter

filters = [
    FastTextLangId(model_path=lid, min_langid_score=score, lang="en"),
    WordCountFilter(min_words=50, max_words=100000), MeanWordLengthFilter(), NonAlphaNumericFilter(),
    SymbolsToWordsFilter(), NumbersFilter(), UrlsFilter(), BulletsFilter(), WhiteSpaceFilter(),
    ParenthesesFilter(), LongWordFilter(), BoilerPlateStringFilter(), EllipsisFilter(), PunctuationFilter(),
    RepeatedLinesFilter(), RepeatedParagraphsFilter(),
    RepeatingTopNGramsFilter(n=2, max_repeating_ngram_ratio=0.2),
    RepeatingTopNGramsFilter(n=3, max_repeating_ngram_ratio=0.18),
    RepeatingTopNGramsFilter(n=4, max_repeating_ngram_ratio=0.16),
    RepeatingDuplicateNGramsFilter(n=5, max_repeating_duplicate_ngram_ratio=0.15),
    RepeatingDuplicateNGramsFilter(n=10, max_repeating_duplicate_ngram_ratio=0.10),
]
stages = [JsonlReader(file_paths=json.loads(inp), files_per_partition=1)]
stages += [ScoreFilter(f, text_field="text", name=f"filter_{i}_{type(f).__name__}") for i, f in enumerate(filters)]
stages.append(JsonlWriter(path=out))
from nemo_curator.backends.xenna import XennaExecutor

# streaming mode wants a CPU per stage at once (23.5 here); batch mode runs the stages in turn
Pipeline(name="nemo-peer", stages=stages).run(XennaExecutor(config={"execution_mode": "batch"}))
'''


def nemo_steps(input_dir: str, work: str, workers: int) -> list[Step]:
    script = os.path.join(work, "run_nemo.py")
    with open(script, "w") as fh:
        fh.write(NEMO_SCRIPT)
    tmp = os.path.join(work, "ray")
    os.makedirs(tmp, exist_ok=True)
    return [Step("run", [str(PEERS / "nemo-curator" / "bin" / "python"), script, json.dumps(input_files(input_dir)),
                         os.path.join(work, "out"), lid_model(), str(workers), tmp, str(LID_SCORE)],
                 {"RAY_TMPDIR": tmp}, work)]


SPEC = {
    "refinery": (refinery_steps, refinery_kept, refinery_stages),
    "data-juicer": (dj_steps, lambda w: jsonl_ids(os.path.join(w, "out", "kept.jsonl")), dj_stages),
    "dolma": (dolma_steps, lambda w: jsonl_ids(os.path.join(w, "out", "*.json*.gz")), lambda w: {}),
    "nemo-curator": (nemo_steps, lambda w: jsonl_ids(os.path.join(w, "out", "**", "*.jsonl")), lambda w: {}),
    **{name: (functools.partial(refinery_steps, stages=lines), refinery_kept, refinery_stages)
       for name, (_, lines) in EQUAL_WORK.items()},
}


def installed(tool: str) -> bool:
    if tool == "refinery" or tool in EQUAL_WORK:
        return True
    exe = {"data-juicer": "dj-process", "dolma": "dolma", "nemo-curator": "python"}[tool]
    return (PEERS / tool / "bin" / exe).exists()


def run_tool(tool: str, input_dir: str, work: str, workers: int, docs: int) -> Result:
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    make, kept, stages = SPEC[tool]
    res = Result(tool, docs, load=loadavg())
    for i, step in enumerate(make(input_dir, work, workers)):
        log = os.path.join(work, "run.log" if i == 0 else f"run{i}.log")
        for attempt in range(3):
            cpu, wall, ok = run_step(step, log)
            # Ray gives a new node 30 s to register (hard-coded); on a saturated machine it can miss
            if ok or "timed out during startup" not in open(log, errors="replace").read():
                break
            res.note += f"{step.name}: Ray start timed out, retried; "
        res.steps[step.name] = cpu
        res.cpu += cpu
        res.wall += wall
        res.ok &= ok
        if not ok:
            res.note = f"step {step.name!r} failed: see {work}"
            break
    res.load += " -> " + loadavg()
    if res.ok:
        res.kept = kept(work)
        res.stage_times = stages(work)
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--input", required=True, help="folder of JSONL shards (make_pipeline_input.py --jsonl)")
    ap.add_argument("--work", default="/tmp/refinery-peers")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tools", nargs="+", default=list(TOOLS), choices=list(TOOLS) + list(EQUAL_WORK),
                    help=f"also {', '.join(EQUAL_WORK)}: refinery doing the kinds of work that peer does")
    ap.add_argument("--tiny", type=int, default=20, help="documents of the start-up run")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--no-startup", action="store_true")
    args = ap.parse_args()

    tools = [t for t in args.tools if installed(t)]
    for t in set(args.tools) - set(tools):
        print(f"note: {t} is not installed under {PEERS}/{t}: left out")
    all_docs = input_docs(args.input)
    ids = [d["id"] for d in all_docs]
    mb = sum(os.path.getsize(f) for f in input_files(args.input)) / 1e6
    print(f"input: {args.input}: {len(ids):,} documents, {mb:.1f} MB of JSONL; {args.workers} workers; "
          f"load average {loadavg()}", flush=True)
    tiny = write_tiny(args.input, os.path.join(args.work, "tiny-input"), args.tiny)

    big: dict[str, list[Result]] = {t: [] for t in tools}
    small: dict[str, list[Result]] = {t: [] for t in tools}
    for r in range(args.rounds):
        order = tools if r % 2 == 0 else tools[::-1]
        for t in order:
            if not args.no_startup:
                s = run_tool(t, tiny, os.path.join(args.work, f"{t}-tiny"), args.workers, args.tiny)
                small[t].append(s)
                print(f"  round {r + 1} {t} start-up ({args.tiny} docs): {s.cpu:.1f} CPU-s, {s.wall:.0f} s wall, "
                      f"load {s.load}{'' if s.ok else ' FAILED ' + s.note}", flush=True)
            b = run_tool(t, args.input, os.path.join(args.work, t), args.workers, len(ids))
            big[t].append(b)
            print(f"  round {r + 1} {t}: {b.cpu:.1f} CPU-s, {b.wall:.0f} s wall, kept {len(b.kept):,}, load {b.load}"
                  f" {json.dumps({k: round(v, 1) for k, v in b.steps.items()})}{'' if b.ok else ' FAILED ' + b.note}",
                  flush=True)

    def med(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2] if xs else float("nan")

    ref_cpu = med([b.cpu for b in big.get("refinery", []) if b.ok])
    ref_start = med([s.cpu for s in small.get("refinery", []) if s.ok])
    print(f"\n| tool | CPU-s, whole run (median of {args.rounds}) | start-up CPU-s ({args.tiny} docs) | docs per CPU-s, end to end "
          "| docs per CPU-s above start-up | refinery's advantage, end to end | above start-up | kept | load avg (1/5/15) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    ref_rate = len(ids) / max(ref_cpu - ref_start, 1e-9)
    for t in tools:
        ok = [b for b in big[t] if b.ok]
        if not ok:
            print(f"| {t} | failed | | | | | | | {big[t][0].note if big[t] else ''} |")
            continue
        cpu = med([b.cpu for b in ok])
        st = med([s.cpu for s in small[t] if s.ok])
        above = len(ids) / max(cpu - st, 1e-9)
        print(f"| {t} | {cpu:.1f} | {st:.1f} | {len(ids) / cpu:.1f} | {above:.1f} | {cpu / ref_cpu:.2f}x "
              f"| {ref_rate / above:.2f}x | {len(ok[0].kept):,} | {ok[0].load} |")

    def cpu_of(t):
        ok = [b for b in big.get(t, []) if b.ok]
        return (med([b.cpu for b in ok]), med([x.cpu for x in small.get(t, []) if x.ok])) if ok else None

    pairs = [(v, peer) for v, (peer, _) in EQUAL_WORK.items() if cpu_of(v) and cpu_of(peer)]
    if pairs:
        print("\nequal work (refinery doing the kinds of work the peer does): the peer's CPU / refinery's")
        for v, peer in pairs:
            (rc, rs), (pc, ps) = cpu_of(v), cpu_of(peer)
            print(f"  {peer} / {v}: end to end {pc / rc:.2f}x ({pc:.1f} / {rc:.1f} CPU-s); above start-up "
                  f"{(pc - ps) / max(rc - rs, 1e-9):.2f}x ({pc - ps:.1f} / {rc - rs:.1f})")

    if "refinery" in big and big["refinery"] and big["refinery"][0].ok:
        ref = big["refinery"][0].kept
        print("\nkept-set agreement with refinery (same fate: share of all input documents kept by both or dropped by both):")
        for t in tools:
            if t == "refinery" or not big[t] or not big[t][0].ok:
                continue
            k = big[t][0].kept
            same = sum(1 for i in ids if (i in ref) == (i in k))
            jac = len(ref & k) / max(1, len(ref | k))
            print(f"  {t}: same fate {100 * same / len(ids):.1f}%, kept Jaccard {jac:.3f} "
                  f"(refinery {len(ref):,}, {t} {len(k):,}, both {len(ref & k):,})")
    print("\nper stage, as each tool reports it or as separate commands (first round):")
    for t in tools:
        if not big[t]:
            continue
        b = big[t][0]
        if len(b.steps) > 1:
            print(f"  {t} (separate commands, CPU-s): " + ", ".join(
                f"{k} {v:.1f} ({b.docs / v:.0f} docs/CPU-s)" for k, v in b.steps.items()))
        if b.stage_times:
            if t == "refinery" or t in EQUAL_WORK:
                print(f"  {t} (its ledger: CPU-s, docs examined): " + ", ".join(
                    f"{k} {c:.1f} s / {n:,} docs ({n / c:.0f} docs/CPU-s)" if n else f"{k} {c:.1f} s"
                    for k, (c, n) in b.stage_times.items() if c))
            else:
                print(f"  {t} (its log, wall s per op with {args.workers} processes): " + ", ".join(
                    f"{k} {w:.1f}" for k, (_, w) in b.stage_times.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
