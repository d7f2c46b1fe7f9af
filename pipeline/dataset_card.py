"""OUT/README.md: the run as a dataset other tools load without being told where to look.

Hugging Face `datasets.load_dataset(OUT)` reads every Parquet file below a folder unless the
folder's README.md declares its `configs` (the dataset-card YAML header): the kept documents,
the rejects and the private keys a retune reads have different columns, so a bare folder fails
with a CastError. The card makes `load_dataset(OUT)` the kept documents (split `train`) and
`load_dataset(OUT, "rejects-LABEL")` one stage's rejects; `keys/` and `_state/` are named by no
config, so no reader that follows the card opens them.
"""
from __future__ import annotations

import posixpath

import yaml

from pipeline import storage

NAME = "README.md"


def write_dataset_card(out: str, files: list[str]) -> None:
    """Write OUT/README.md for a run whose committed files (relative to OUT) are `files`."""
    configs = [{"config_name": "default", "data_files": [{"split": "train", "path": "kept/*.parquet"}]}]
    labels = sorted({f.split("/")[1] for f in files if f.startswith("rejects/") and f.count("/") == 2})
    for label in labels:
        configs.append({"config_name": f"rejects-{label}",
                        "data_files": [{"split": "train", "path": posixpath.join("rejects", label, "*.parquet")}]})
    header = yaml.safe_dump({"configs": configs}, sort_keys=False)
    body = ("# refinery run\n\n"
            "Kept documents: `kept/*.parquet` (the default config). Rejected documents, per stage: "
            "`rejects/LABEL/*.parquet` (configs `rejects-LABEL`), with `drop_stage`, `drop_reason` and "
            "`drop_detail`. `_SUCCESS` lists every committed file; `ledger.json` counts every document. "
            "`keys/` and `_state/` are refinery's own (retune, resume), not data.\n")
    storage.write_text(storage.join(out, NAME), f"---\n{header}---\n{body}")
