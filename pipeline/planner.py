"""Training planner: from a token budget and a model shape to FLOPs, days, chips and memory.

The arithmetic (as in "How to Scale Your Model", Austin et al., part 6, for LLaMA 3 on TPUs):
  parameters      FFN 3*D*F*L (SwiGLU: up, gate, down) + attention L*(2*D*N*H + 2*D*K*H)
                  (Q and O projections, K and V projections with K kv heads) + embeddings 2*V*D
                  (input table and unembedding); norms are negligible and left out.
  FLOPs/token     6 * params (2 forward + 4 backward per parameter per token)
  total FLOPs     FLOPs/token * tokens
  time            total FLOPs / (chips * peak bf16 FLOP/s * MFU)
  tokens/param    against the Chinchilla ratio of about 20; epochs = tokens / unique tokens
  memory floor    parameters in bf16 (2 bytes) + fp32 Adam state, two moments (8 bytes)
                  [+ optional fp32 master weights (4 bytes) and bf16 gradients (2 bytes)]
                  + activation checkpoints: batch tokens * L * checkpoints per layer * D * 2 bytes
                  (bf16 residual-stream-sized tensors). The published LLaMA 3 70B figure
                  (~21.6 TB at a 4M-token batch, 4 checkpoints per layer) uses exactly these terms;
                  minimum chips = ceil(memory / HBM per chip).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass

from pipeline.errors import ConfigError

CHINCHILLA_TOKENS_PER_PARAM = 20.0
SECONDS_PER_DAY = 86_400


@dataclass(frozen=True)
class ModelShape:
    L: int  # layers
    D: int  # model dimension
    F: int  # FFN hidden dimension
    N: int  # attention (query) heads
    K: int  # key/value heads
    H: int  # head dimension
    V: int  # vocabulary

    def parameter_breakdown(self) -> dict[str, int]:
        return {
            "ffn": 3 * self.D * self.F * self.L,
            "attention": self.L * (2 * self.D * self.N * self.H + 2 * self.D * self.K * self.H),
            "embeddings": 2 * self.V * self.D,
        }

    @property
    def params(self) -> int:
        return sum(self.parameter_breakdown().values())


# Shapes from the Hugging Face configs of Meta-Llama-3 / 3.1.
MODELS: dict[str, ModelShape] = {
    "llama3-8b": ModelShape(L=32, D=4096, F=14336, N=32, K=8, H=128, V=128256),
    "llama3-70b": ModelShape(L=80, D=8192, F=28672, N=64, K=8, H=128, V=128256),
    "llama3-405b": ModelShape(L=126, D=16384, F=53248, N=128, K=8, H=128, V=128256),
}


@dataclass(frozen=True)
class Hardware:
    name: str
    peak_bf16_flops: float  # dense bf16 FLOP/s per chip
    hbm_bytes: float  # memory per chip


HARDWARE: dict[str, Hardware] = {
    "a100": Hardware("A100 80GB SXM", 312e12, 80e9),
    "h100": Hardware("H100 SXM", 989e12, 80e9),
    "h200": Hardware("H200 SXM", 989e12, 141e9),
    "tpu-v5p": Hardware("TPU v5p", 459e12, 96e9),
}


@dataclass
class Plan:
    model: str
    params: int
    parameter_breakdown: dict[str, int] | None
    tokens: float
    unique_tokens: float | None
    flops_per_token: float
    total_flops: float
    hardware: str
    chips: int
    mfu: float
    seconds: float
    days: float
    chip_hours: float
    tokens_per_param: float
    chinchilla_ratio: float
    chinchilla_tokens: float
    epochs_over_unique: float | None
    batch_tokens: float
    checkpoints_per_layer: int
    memory_bytes: dict[str, float] | None
    memory_total_bytes: float | None
    min_chips: int | None
    hbm_bytes_per_chip: float = 0.0
    feasible: bool = True  # the chips hold the training state and the run ends within PRACTICAL_DAYS
    verdict: str = ""


def memory_floor(
    params: int,
    shape: ModelShape | None,
    batch_tokens: float,
    checkpoints_per_layer: int,
    master_weights: bool = False,
    gradients: bool = False,
) -> dict[str, float]:
    """Bytes of training state: bf16 params, fp32 Adam moments (+options), activation checkpoints."""
    mem = {"params_bf16": 2.0 * params, "adam_moments_fp32": 8.0 * params}
    if master_weights:
        mem["master_weights_fp32"] = 4.0 * params
    if gradients:
        mem["gradients_bf16"] = 2.0 * params
    if shape is not None:
        mem["activation_checkpoints_bf16"] = 2.0 * batch_tokens * shape.L * checkpoints_per_layer * shape.D
    return mem


def make_plan(
    *,
    tokens: float,
    shape: ModelShape | None = None,
    params: int | None = None,
    model: str = "custom",
    hardware: str = "h100",
    chips: int = 1,
    mfu: float = 0.4,
    unique_tokens: float | None = None,
    batch_tokens: float = 4e6,
    checkpoints_per_layer: int = 4,
    master_weights: bool = False,
    gradients: bool = False,
    hbm_bytes: float | None = None,
) -> Plan:
    if shape is None and params is None:
        raise ConfigError("plan: give --model, the shape (L D F N K H V) or --params")
    if tokens <= 0:
        raise ConfigError("plan: --tokens must be positive")
    if not 0 < mfu <= 1:
        raise ConfigError(f"plan: --mfu {mfu} must be in (0, 1]")
    if chips <= 0:
        raise ConfigError("plan: --chips must be positive")
    hw_key = hardware.lower()
    if hw_key not in HARDWARE:
        raise ConfigError(f"plan: --hardware {hardware!r}: unknown (known: {', '.join(HARDWARE)})")
    hw = HARDWARE[hw_key]
    n = shape.params if shape is not None else int(params)
    fpt = 6.0 * n
    total = fpt * tokens
    seconds = total / (chips * hw.peak_bf16_flops * mfu)
    mem = memory_floor(n, shape, batch_tokens, checkpoints_per_layer, master_weights, gradients)
    mem_total = sum(mem.values())
    per_chip = hbm_bytes or hw.hbm_bytes
    return Plan(
        model=model,
        params=n,
        parameter_breakdown=shape.parameter_breakdown() if shape is not None else None,
        tokens=tokens,
        unique_tokens=unique_tokens,
        flops_per_token=fpt,
        total_flops=total,
        hardware=hw.name,
        chips=chips,
        mfu=mfu,
        seconds=seconds,
        days=seconds / SECONDS_PER_DAY,
        chip_hours=seconds * chips / 3600,
        tokens_per_param=tokens / n,
        chinchilla_ratio=CHINCHILLA_TOKENS_PER_PARAM,
        chinchilla_tokens=CHINCHILLA_TOKENS_PER_PARAM * n,
        epochs_over_unique=(tokens / unique_tokens) if unique_tokens else None,
        batch_tokens=batch_tokens,
        checkpoints_per_layer=checkpoints_per_layer,
        memory_bytes=mem,
        memory_total_bytes=mem_total,
        min_chips=math.ceil(mem_total / per_chip),
        hbm_bytes_per_chip=per_chip,
        **verdict(chips, seconds / SECONDS_PER_DAY, math.ceil(mem_total / per_chip), mem_total, per_chip),
    )


# Longer than this is not a training run anyone plans (the largest published runs took months).
PRACTICAL_DAYS = 365.0


def verdict(chips: int, days: float, min_chips: int, mem_total: float, per_chip: float) -> dict:
    """Whether the plan can run as given, and why not: the chips must hold the training state
    (parameters, optimizer state, activation checkpoints) and the run end within PRACTICAL_DAYS."""
    why = []
    if chips < min_chips:
        why.append(f"{chips:,} chips hold {_si(chips * per_chip, 'B')} of HBM but the training state needs "
                   f"{_si(mem_total, 'B')}: at least {min_chips:,} chips")
    if days > PRACTICAL_DAYS:
        needed = math.ceil(chips * days / PRACTICAL_DAYS)
        why.append(f"{days:,.0f} days is over {PRACTICAL_DAYS:.0f}: {needed:,} chips finish in a year at this MFU")
    if why:
        return {"feasible": False, "verdict": "NOT FEASIBLE: " + "; ".join(why)}
    return {"feasible": True, "verdict": f"feasible: the state fits {chips:,} chips (at least {min_chips:,}) and "
                                         f"the run takes {days:,.1f} days"}


def _si(x: float, unit: str = "") -> str:
    for div, suf in ((1e24, "Y"), (1e21, "Z"), (1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{x / div:.3g} {suf}{unit}"
    return f"{x:.3g} {unit}"


def format_plan(p: Plan) -> list[str]:
    lines = [f"model            {p.model}: {p.params / 1e9:.2f}B parameters"]
    if p.parameter_breakdown:
        b = p.parameter_breakdown
        lines.append(
            "                 " + ", ".join(f"{k} {v / 1e9:.2f}B" for k, v in b.items())
        )
    lines += [
        f"tokens           {p.tokens:.4g}" + (f" (unique {p.unique_tokens:.4g})" if p.unique_tokens else ""),
        f"FLOPs/token      {p.flops_per_token:.3g} (6 x params)",
        f"total FLOPs      {p.total_flops:.3g}",
        f"hardware         {p.chips:,} x {p.hardware} at {p.mfu:.0%} MFU",
        f"time             {p.days:.1f} days, {p.chip_hours:,.0f} chip-hours",
        f"tokens/param     {p.tokens_per_param:.1f} (Chinchilla ~{p.chinchilla_ratio:g}: "
        f"{p.chinchilla_tokens:.3g} tokens; {p.tokens_per_param / p.chinchilla_ratio:.1f}x)",
    ]
    if p.epochs_over_unique is not None:
        lines.append(f"epochs           {p.epochs_over_unique:.2f} over the unique tokens")
    if p.memory_bytes:
        parts = ", ".join(f"{k} {_si(v, 'B')}" for k, v in p.memory_bytes.items())
        lines.append(
            f"memory floor     {_si(p.memory_total_bytes, 'B')} at a {p.batch_tokens:.3g}-token batch, "
            f"{p.checkpoints_per_layer} checkpoints/layer ({parts})"
        )
        lines.append(f"minimum chips    {p.min_chips:,} (to hold the training state)")
    lines.append(f"verdict          {p.verdict}")
    return lines


def tokens_from_mixture(path: str) -> tuple[float, float | None]:
    """(tokens, unique tokens) from a mixture.json written by `refinery mix`."""
    try:
        from pipeline import storage

        data = json.loads(storage.read_bytes(path))
        totals = data["totals"]
        return float(totals["tokens"]), float(totals.get("unique_tokens") or 0) or None
    except FileNotFoundError:
        raise ConfigError(f"{path}: mixture.json not found") from None
    except (ValueError, KeyError, TypeError) as e:
        raise ConfigError(f"{path}: not a mixture.json (totals.tokens missing: {e})") from None


def tokens_from_projection(path: str) -> float:
    """Projected clean tokens from OUT/report/projection.json (`refinery report --project SIZE`)."""
    try:
        from pipeline import storage

        return float(json.loads(storage.read_bytes(path))["projected_clean_tokens"])
    except FileNotFoundError:
        raise ConfigError(f"{path}: projection.json not found") from None
    except (ValueError, KeyError, TypeError) as e:
        raise ConfigError(f"{path}: not a projection.json (projected_clean_tokens missing: {e})") from None


# -- closing the loop: does a run reach the training target, and what to relax if not ----------------
DEFAULT_MAX_EPOCHS = 4.0  # Muennighoff et al. 2023: up to ~4 epochs of repeated data about as good as unique


@dataclass
class Relaxation:
    setting: str
    value: object
    tokens: float  # added unique tokens at the target raw size (point)
    lo: float
    hi: float
    docs: int  # documents freed in the run itself
    reaches: bool  # reaches the target alone (with the epoch cap)
    samples: str  # where the report shows its documents


@dataclass
class RunPlan:
    run: str
    raw_bytes: float
    target_tokens: float
    max_epochs: float
    unique_tokens: float
    unique_lo: float
    unique_hi: float
    reaches: bool
    shortfall_tokens: float
    relaxations: list[Relaxation]
    target_text: str = ""  # the --target size as given (empty: --target-tokens)
    bytes_per_token: float = 0.0


def _shard_raw_bytes(run: str) -> dict[str, float]:
    """shard number (as a string, the key of yield.json's by_shard) -> its raw input bytes (OUT/shards.jsonl)."""
    from pipeline import storage

    out = {}
    for line in storage.read_text(storage.join(run, "shards.jsonl")).splitlines():
        if line.strip():
            e = json.loads(line)
            out[str(e["shard"])] = float(sum(v.get("bytes", 0) for v in e["ledger"].get("inputs", {}).values()))
    return out


def _bootstrap(gains: dict[str, float], raw: dict[str, float], scale_to: float, resamples: int = 2000,
               seed: int = 0) -> tuple[float, float, float]:
    """Ratio estimate scale_to * sum(gain) / sum(raw) over shards, with a 90% percentile bootstrap."""
    import numpy as np

    names = sorted(raw)
    g = np.array([gains.get(n, 0.0) for n in names])
    r = np.array([raw[n] for n in names])
    if r.sum() <= 0:
        return 0.0, 0.0, 0.0
    point = scale_to * g.sum() / r.sum()
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(names), size=(resamples, len(names)))
    rs = r[idx].sum(axis=1)
    est = scale_to * g[idx].sum(axis=1) / np.where(rs > 0, rs, np.nan)
    lo, hi = np.nanpercentile(est, [5, 95])
    return float(point), float(lo), float(hi)


def plan_run(run: str, target_bytes: float | None = None, target_tokens: float | None = None,
             raw_bytes: float | None = None, max_epochs: float = DEFAULT_MAX_EPOCHS) -> RunPlan:
    """Whether RUN's unique tokens, projected to `raw_bytes` of raw input (default: its report's
    projection, 4.3 TB), reach the target with at most `max_epochs` repetitions, and the
    relaxations from the report's yield (report/yield.json) ranked by the tokens they add there."""
    from pipeline import storage

    proj = storage.read_json(storage.join(run, "report", "projection.json"))
    yld = storage.read_json(storage.join(run, "report", "yield.json"))
    if proj is None or yld is None:
        raise ConfigError(f"plan: {run}/report has no projection.json or yield.json; run `refinery report {run}` first")
    scale = (raw_bytes / proj["raw_bytes"]) if raw_bytes else 1.0
    raw = raw_bytes or proj["raw_bytes"]
    unique = proj["projected_clean_tokens"] * scale
    lo, hi = (x * scale for x in proj["interval"])
    bytes_per_token = proj["projected_clean_bytes"] / proj["projected_clean_tokens"] if proj["projected_clean_tokens"] else 0
    target_text = ""
    if target_tokens is None:
        if not target_bytes:
            raise ConfigError("plan: give --target SIZE (clean text, e.g. 3.2TB) or --target-tokens N")
        target_text = f"{target_bytes / 1e12:.3g} TB"
        if not bytes_per_token:
            raise ConfigError(f"plan: {run} kept no tokens; cannot convert {target_bytes:g} bytes to tokens")
        target_tokens = target_bytes / bytes_per_token
    reaches = unique * max_epochs >= target_tokens
    need = max(0.0, target_tokens / max_epochs - unique)
    shard_raw = _shard_raw_bytes(run)
    out = []
    for rule in yld["rules"]:
        best = None
        for p in rule["points"]:  # the smallest relaxation that reaches, else the largest gain
            point, plo, phi = _bootstrap(p.get("by_shard", {}), shard_raw, raw)
            if point <= 0:
                continue
            cand = Relaxation(rule["setting"], p["value"], point, plo, phi, p["docs"], point >= need > 0,
                              f"{run}/report/report.md: '{rule['setting']} = ...' under 'At the thresholds'")
            if best is None or (cand.reaches and not best.reaches):
                best = cand
            elif not best.reaches and cand.tokens > best.tokens:
                best = cand
            if best.reaches:
                break
        if best is not None:
            out.append(best)
    out.sort(key=lambda r: (not r.reaches, -r.tokens if not r.reaches else _steps(r, yld)))
    return RunPlan(run, raw, target_tokens, max_epochs, unique, lo, hi, reaches, need, out, target_text, bytes_per_token)


def _steps(r: Relaxation, yld: dict) -> int:
    """How far a relaxation moves its setting (position among its points): smaller first."""
    for rule in yld["rules"]:
        if rule["setting"] == r.setting:
            for i, p in enumerate(rule["points"]):
                if p["value"] == r.value:
                    return i
    return 99


def format_run_plan(p: RunPlan) -> list[str]:
    from pipeline.report.projection import human_count

    lines = [
        f"run {p.run}: projected to {p.raw_bytes / 1e12:.3g} TB of raw input: {human_count(p.unique_tokens)} unique tokens "
        f"(90% interval {human_count(p.unique_lo)} to {human_count(p.unique_hi)})",
        (f"target {p.target_text} of clean text read as training text: {human_count(p.target_tokens)} training tokens "
         f"at the run's {p.bytes_per_token:.2f} bytes per token, reached by repeating unique text at most "
         f"{p.max_epochs:g} times (--max-epochs 1 reads the target as unique text)" if p.target_text else
         f"target {human_count(p.target_tokens)} training tokens (--target-tokens), reached by repeating unique text "
         f"at most {p.max_epochs:g} times"),
        f"needs {human_count(p.target_tokens / p.max_epochs)} unique tokens -> "
        + ("REACHED" if p.reaches else f"SHORT by {human_count(p.shortfall_tokens)} unique tokens"),
    ]
    if not p.reaches:
        lines.append("relaxations (one setting each, all others fixed; tokens added at that scale, 90% bootstrap interval "
                     "over the run's shards; later stages estimated, verify with `refinery retune`):")
        if not p.relaxations:
            lines.append("  none of the run's decision settings frees any document")
        for r in p.relaxations:
            v = r.value if not isinstance(r.value, float) else f"{r.value:.4g}"
            lines.append(f"  {'reaches' if r.reaches else 'short  '}  {r.setting} = {v}: +{human_count(r.tokens)} "
                         f"[{human_count(r.lo)}, {human_count(r.hi)}] unique tokens ({r.docs:,} documents in the run); "
                         f"samples: {r.samples}")
        if p.relaxations and not any(r.reaches for r in p.relaxations):
            total = sum(r.tokens for r in p.relaxations)
            lines.append(f"  all of them together (sum; overlaps make it an upper bound): +{human_count(total)} -> "
                         + ("may reach: verify with `refinery retune` and several --set" if total >= p.shortfall_tokens
                            else "still short: relax further or add data"))
        good = next((r for r in p.relaxations if r.reaches), None)
        if good is not None:
            v = good.value if not isinstance(good.value, float) else f"{good.value:.4g}"
            lines.append(f"try: refinery retune {p.run} --set {good.setting}={'null' if v == 'off' else v} --out RUN2")
    return lines


def main_plan_run(args: argparse.Namespace) -> int:
    from pipeline.report.projection import parse_size

    try:
        target = parse_size(args.target) if args.target else None
        raw = parse_size(args.raw) if args.raw else None
    except ValueError as e:
        print(f"error: plan: {e}", file=sys.stderr)
        return 2
    if args.max_epochs <= 0:
        print("error: plan: --max-epochs must be positive", file=sys.stderr)
        return 2
    try:
        p = plan_run(args.run, target, args.target_tokens, raw, args.max_epochs)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(asdict(p), indent=2, default=str))
    else:
        print("\n".join(format_run_plan(p)))
    return 0


def add_plan_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "plan",
        help="training compute, time and memory for a token budget",
        description="FLOPs, days, chip-hours, tokens/param and the memory floor for training a model "
        "on a token budget (--tokens, or --mixture OUT/mixture.json).",
    )
    p.add_argument("--model", help=f"preset: {', '.join(MODELS)}")
    for k, h in (("L", "layers"), ("D", "model dim"), ("F", "FFN dim"), ("N", "heads"), ("K", "kv heads"), ("H", "head dim"), ("V", "vocab")):
        p.add_argument(f"-{k}", type=int, help=h)
    p.add_argument("--params", type=float, help="parameter count instead of a shape (no activation memory)")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--tokens", type=float, help="training tokens, e.g. 15e12")
    budget.add_argument("--mixture", help="mixture.json from `refinery mix` (its totals)")
    p.add_argument("--projection", help="projection.json from `refinery report --project SIZE`: its projected "
                   "clean tokens are the unique tokens (and the training tokens unless --tokens is given)")
    p.add_argument("--unique-tokens", type=float, help="unique tokens (for epochs); --mixture gives it")
    p.add_argument("--hardware", default="h100", help=f"{', '.join(HARDWARE)}")
    p.add_argument("--chips", type=int, default=1)
    p.add_argument("--mfu", type=float, default=0.4)
    p.add_argument("--batch-tokens", type=float, default=4e6, help="global batch in tokens (default 4e6)")
    p.add_argument("--checkpoints-per-layer", type=int, default=4)
    p.add_argument("--master-weights", action="store_true", help="add fp32 master weights (4 B/param)")
    p.add_argument("--gradients", action="store_true", help="add bf16 gradients (2 B/param)")
    p.add_argument("--hbm-gb", type=float, help="memory per chip in GB (default: the hardware's)")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.add_argument("--run", help="a finished run (with its report): does it reach --target, and what to relax")
    p.add_argument("--target", help="with --run: clean text the training needs, e.g. 3.2TB")
    p.add_argument("--target-tokens", type=float, help="with --run: training tokens instead of --target")
    p.add_argument("--raw", help="with --run: raw input size to project to (default: the report's, 4.3TB)")
    p.add_argument("--max-epochs", type=float, default=DEFAULT_MAX_EPOCHS,
                   help="with --run: repetitions allowed (default 4, Muennighoff et al. 2023)")
    p.set_defaults(func=main_plan)
    return p


def plan_from_args(args: argparse.Namespace) -> Plan:
    dims = {k: getattr(args, k, None) for k in "LDFNKHV"}
    shape = None
    name = "custom"
    if args.model:
        key = args.model.lower()
        if key not in MODELS:
            raise ConfigError(f"plan: --model {args.model!r}: unknown (known: {', '.join(MODELS)})")
        shape, name = MODELS[key], key
    elif any(v is not None for v in dims.values()):
        missing = [k for k, v in dims.items() if v is None]
        if missing:
            raise ConfigError(f"plan: a model shape needs all of L D F N K H V; missing {' '.join(missing)}")
        shape = ModelShape(**dims)
    if args.mixture:
        tokens, unique = tokens_from_mixture(args.mixture)
    else:
        tokens, unique = args.tokens, None
    if getattr(args, "projection", None):
        unique = tokens_from_projection(args.projection)
        tokens = tokens or unique
    if not tokens:
        if getattr(args, "target", None) or getattr(args, "target_tokens", None):
            raise ConfigError("plan: --target is read against a run: give --run RUN (a finished run with its report)")
        raise ConfigError("plan: give the token budget: --tokens, --mixture or --projection (or --run RUN --target SIZE)")
    if args.unique_tokens:
        unique = args.unique_tokens
    return make_plan(
        tokens=tokens,
        shape=shape,
        params=int(args.params) if args.params else None,
        model=name,
        hardware=args.hardware,
        chips=args.chips,
        mfu=args.mfu,
        unique_tokens=unique,
        batch_tokens=args.batch_tokens,
        checkpoints_per_layer=args.checkpoints_per_layer,
        master_weights=args.master_weights,
        gradients=args.gradients,
        hbm_bytes=args.hbm_gb * 1e9 if args.hbm_gb else None,
    )


# Numeric options that must be finite and positive: a NaN, an infinity, a zero or a negative
# count gives a traceback (int(nan), a division by zero) or a plan of nonsense.
POSITIVE_OPTIONS = ("L", "D", "F", "N", "K", "H", "V", "params", "tokens", "unique_tokens", "chips", "batch_tokens",
                    "checkpoints_per_layer", "hbm_gb", "target_tokens", "max_epochs")


def bad_number(args: argparse.Namespace) -> str | None:
    for k in POSITIVE_OPTIONS:
        v = getattr(args, k, None)
        if v is not None and not (math.isfinite(v) and v > 0):
            flag = f"-{k}" if len(k) == 1 else "--" + k.replace("_", "-")
            return f"plan: {flag} must be a positive number (got {v:g})"
    return None


def main_plan(args: argparse.Namespace) -> int:
    bad = bad_number(args)
    if bad:
        print(f"error: {bad}", file=sys.stderr)
        return 2
    if getattr(args, "run", None):
        return main_plan_run(args)
    try:
        plan = plan_from_args(args)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if getattr(args, "json", False):
        print(json.dumps(asdict(plan), indent=2))
    else:
        print("\n".join(format_plan(plan)))
    return 0
