"""Loading fastText models and feeding them text, shared by the langid and toxicity stages.

fastText reads one line per example: a newline inside the text ends the example (and makes
`predict` raise), so every caller flattens text with `one_line` first.
"""
from __future__ import annotations

import re
from pathlib import Path

_NEWLINES = re.compile(r"[\r\n\u2028\u2029\x0b\x0c\x85]+")


def one_line(text: str, max_chars: int | None = None) -> str:
    """Text as one fastText line: a prefix of `max_chars` characters, line breaks as spaces."""
    if max_chars is not None and len(text) > max_chars:
        text = text[:max_chars]
    return _NEWLINES.sub(" ", text).strip()


def load_model(path: str | Path):
    """Load a fastText model (.bin or quantised .ftz) with the trainable `fasttext` module.

    `_FastText` is what `fasttext.load_model` builds, minus the deprecation warning it prints.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"fastText model not found: {path}")
    from fasttext.FastText import _FastText

    return _FastText(model_path=str(path))


def strip_label(label: str) -> str:
    """`__label__en` -> `en`, `__label__eng_Latn` -> `eng_Latn`."""
    return label[9:] if label.startswith("__label__") else label


def _train_in_child(kwargs: dict, quantize: dict | None, out: str) -> None:
    import fasttext

    model = fasttext.train_supervised(**kwargs)
    if quantize is not None:
        model.quantize(input=kwargs["input"], **quantize)
    model.save_model(out)


def train_supervised(attempts: int = 10, quantize: dict | None = None, **kwargs):
    """`fasttext.train_supervised` (then `quantize(**quantize)` if given), in a fresh process.

    fastText 0.9.2 sporadically aborts training with "Encountered NaN." and, once it has, keeps
    failing in that process (more often after other libraries are loaded); a fresh spawned process
    per attempt gets past it. Same seed and thread=1 give the same model bytes. Returns the model.
    """
    import multiprocessing
    import tempfile

    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / ("model.ftz" if quantize is not None else "model.bin"))
        for _ in range(attempts):
            proc = ctx.Process(target=_train_in_child, args=(kwargs, quantize, out))
            proc.start()
            proc.join()
            if proc.exitcode == 0 and Path(out).is_file():
                return load_model(out)
        raise RuntimeError(f"fastText training failed {attempts} times (exit code {proc.exitcode})")
