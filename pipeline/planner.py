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
    )


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
        raise ConfigError("plan: give the token budget: --tokens, --mixture or --projection")
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


def main_plan(args: argparse.Namespace) -> int:
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
