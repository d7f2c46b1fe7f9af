"""The planner reproduces the published LLaMA 3 70B on TPU v5p arithmetic from its formulas."""
from __future__ import annotations

import argparse
import json
import math

import pytest

from pipeline.planner import HARDWARE, MODELS, ModelShape, add_plan_parser, make_plan, memory_floor


def run_cli(argv):
    parser = argparse.ArgumentParser()
    add_plan_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


def test_llama3_70b_published_numbers():
    p = make_plan(tokens=15e12, shape=MODELS["llama3-70b"], model="llama3-70b", hardware="tpu-v5p",
                  chips=8960, mfu=0.4, batch_tokens=4e6, checkpoints_per_layer=4)
    assert p.params == pytest.approx(70.4e9, rel=0.01)  # published "70B"/70.4B; shape gives 70.55B
    assert p.flops_per_token == pytest.approx(4.2e11, rel=0.01)
    assert p.total_flops == pytest.approx(6.3e24, rel=0.01)
    assert 44 <= p.days < 45.5  # published "about 44 days"
    assert p.memory_total_bytes == pytest.approx(21.6e12, rel=0.005)  # published ~21.6 TB
    # published: 21.6 TB / 96 GB = 225 chips; the unrounded total needs one more
    assert p.min_chips == math.ceil(p.memory_total_bytes / 96e9)
    assert 225 <= p.min_chips <= 226
    assert p.tokens_per_param == pytest.approx(15e12 / p.params)


def test_llama3_405b_meta_compute():
    """Meta's model card: 3.8e25 FLOPs for 405B parameters on 15.6T tokens."""
    p = make_plan(tokens=15.6e12, shape=MODELS["llama3-405b"], hardware="h100", chips=16384)
    assert p.total_flops == pytest.approx(3.8e25, rel=0.01)


def test_parameter_breakdown_formula():
    s = MODELS["llama3-70b"]
    b = s.parameter_breakdown()
    assert b["ffn"] == 3 * 8192 * 28672 * 80
    assert b["attention"] == 80 * (2 * 8192 * 64 * 128 + 2 * 8192 * 8 * 128)
    assert b["embeddings"] == 2 * 128256 * 8192
    assert MODELS["llama3-8b"].params == pytest.approx(8.0e9, rel=0.01)
    assert MODELS["llama3-405b"].params == pytest.approx(405e9, rel=0.01)


def test_memory_terms():
    s = ModelShape(L=2, D=10, F=40, N=2, K=1, H=5, V=100)
    m = memory_floor(1000, s, batch_tokens=50, checkpoints_per_layer=3)
    assert m == {"params_bf16": 2000, "adam_moments_fp32": 8000, "activation_checkpoints_bf16": 2 * 50 * 2 * 3 * 10}
    m = memory_floor(1000, None, 50, 3, master_weights=True, gradients=True)
    assert m == {"params_bf16": 2000, "adam_moments_fp32": 8000, "master_weights_fp32": 4000, "gradients_bf16": 2000}


def test_hardware_table():
    assert HARDWARE["tpu-v5p"].peak_bf16_flops == 459e12 and HARDWARE["tpu-v5p"].hbm_bytes == 96e9
    assert HARDWARE["h100"].peak_bf16_flops == 989e12 and HARDWARE["a100"].peak_bf16_flops == 312e12


def test_cli_preset(capsys):
    rc = run_cli(["plan", "--model", "llama3-70b", "--hardware", "tpu-v5p", "--chips", "8960", "--mfu", "0.4", "--tokens", "15e12"])
    out = capsys.readouterr().out
    assert rc == 0 and "70.55B parameters" in out and "44.7 days" in out and "minimum chips    226" in out


def test_cli_mixture_json_and_epochs(tmp_path, capsys):
    mj = tmp_path / "mixture.json"
    mj.write_text(json.dumps({"totals": {"tokens": 3e12, "unique_tokens": 1e12}}))
    rc = run_cli(["plan", "--model", "llama3-8b", "--hardware", "h100", "--chips", "1024", "--mixture", str(mj), "--json"])
    p = json.loads(capsys.readouterr().out)
    assert rc == 0 and p["tokens"] == 3e12 and p["epochs_over_unique"] == pytest.approx(3.0)
    assert p["total_flops"] == pytest.approx(6 * MODELS["llama3-8b"].params * 3e12)
    assert p["days"] == pytest.approx(p["total_flops"] / (1024 * 989e12 * 0.4) / 86400)


def test_cli_projection_from_the_funnel_report(tmp_path, capsys):
    pj = tmp_path / "projection.json"
    pj.write_text(json.dumps({"projected_clean_tokens": 5e11, "interval": [4e11, 6e11]}))
    rc = run_cli(["plan", "--model", "llama3-8b", "--projection", str(pj), "--tokens", "1.5e12", "--json"])
    p = json.loads(capsys.readouterr().out)
    assert rc == 0 and p["tokens"] == 1.5e12 and p["epochs_over_unique"] == pytest.approx(3.0)
    rc = run_cli(["plan", "--model", "llama3-8b", "--projection", str(pj), "--json"])
    assert rc == 0 and json.loads(capsys.readouterr().out)["tokens"] == 5e11


def test_cli_shape_and_params(capsys):
    rc = run_cli(["plan", "-L", "2", "-D", "64", "-F", "256", "-N", "4", "-K", "2", "-H", "16", "-V", "1000", "--tokens", "1e9", "--json"])
    p = json.loads(capsys.readouterr().out)
    assert rc == 0 and p["params"] == 3 * 64 * 256 * 2 + 2 * (2 * 64 * 4 * 16 + 2 * 64 * 2 * 16) + 2 * 1000 * 64
    rc = run_cli(["plan", "--params", "1e9", "--tokens", "2e10", "--json"])
    p = json.loads(capsys.readouterr().out)
    assert rc == 0 and p["tokens_per_param"] == 20 and "activation_checkpoints_bf16" not in p["memory_bytes"]


@pytest.mark.parametrize("argv,msg", [
    (["--model", "gpt9", "--tokens", "1e9"], "unknown"),
    (["--model", "llama3-8b", "--tokens", "1e9", "--hardware", "tpu-v9"], "unknown"),
    (["-L", "2", "--tokens", "1e9"], "missing D F N K H V"),
    (["--model", "llama3-8b", "--tokens", "1e9", "--mfu", "1.5"], "mfu"),
    (["--tokens", "1e9"], "give --model"),
    (["--model", "llama3-8b", "--mixture", "/nonexistent/mixture.json"], "not found"),
    (["--model", "llama3-8b"], "give the token budget"),
    (["--model", "llama3-8b", "--projection", "/nonexistent/projection.json"], "not found"),
    # these gave a traceback (int(nan), int(inf), a division by zero) or a plan of nan/negative numbers
    (["--params", "nan", "--tokens", "1e9"], "--params must be a positive number (got nan)"),
    (["--params", "inf", "--tokens", "1e9"], "--params must be a positive number (got inf)"),
    (["--params", "-5", "--tokens", "1e9"], "--params must be a positive number"),
    (["--model", "llama3-8b", "--tokens", "nan"], "--tokens must be a positive number"),
    (["--model", "llama3-8b", "--tokens", "1e9", "--batch-tokens", "nan"], "--batch-tokens must be"),
    (["--model", "llama3-8b", "--tokens", "1e9", "--unique-tokens", "0"], "--unique-tokens must be"),
    ([*"-L 0 -D 0 -F 0 -N 0 -K 0 -H 0 -V 0".split(), "--tokens", "1e9"], "-L must be a positive number"),
    (["--run", "/nonexistent", "--target-tokens", "nan"], "--target-tokens must be"),
    (["--run", "/nonexistent", "--target", "1e400TB"], "size must be positive and finite"),
])
def test_cli_errors_exit_2(argv, msg, capsys):
    assert run_cli(["plan", *argv]) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1


def test_a_plan_says_whether_it_is_feasible_and_why(capsys):
    from pipeline.cli import main

    assert main(["plan", "--model", "llama3-405b", "--hardware", "a100", "--chips", "16", "--mfu", "0.4",
                 "--tokens", "15e12"]) == 0
    out = capsys.readouterr().out
    verdict = [line for line in out.splitlines() if line.startswith("verdict")]
    assert verdict and "NOT FEASIBLE" in verdict[0] and "at least 877 chips" in verdict[0] and "days" in verdict[0]
    assert main(["plan", "--model", "llama3-8b", "--hardware", "h100", "--chips", "1024", "--mfu", "0.4",
                 "--tokens", "15e12", "--json"]) == 0
    import json
    plan = json.loads(capsys.readouterr().out)
    assert plan["feasible"] is True and plan["verdict"].startswith("feasible")


def test_a_target_without_a_run_points_at_run(capsys):
    from pipeline.cli import main

    assert main(["plan", "--target", "3.2TB"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--run RUN" in err[0]
