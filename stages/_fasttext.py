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


def train_supervised(attempts: int = 5, **kwargs):
    """`fasttext.train_supervised`, retried when fastText aborts with "Encountered NaN.".

    fastText 0.9.2 sporadically raises that on tiny inputs (the same call, same seed, fails in some
    runs and succeeds in others); a retry gets past it.
    """
    import fasttext

    for attempt in range(attempts):
        try:
            return fasttext.train_supervised(**kwargs)
        except RuntimeError as e:
            if "NaN" not in str(e) or attempt == attempts - 1:
                raise
