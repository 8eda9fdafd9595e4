"""The share of words a served model reads as unknown, as ``absa_words_total{known}`` counts
them (each text's words once, through the runtime's pipeline): on each test set, and on a few
texts of other languages and domains written here, for the AbsaUnknownWords alert's
threshold (deploy/prometheus/alerts.yml).

    python benchmarks/unknown_words.py [--artifact model/artifacts/default]

Writes benchmarks/results/robustness/unknown-words__<name>-<version>.json and a Markdown
table. Deterministic: no model call, the pipeline's tokens alone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from absa.model import artifact  # noqa: E402
from absa.model.text import load_pipeline  # noqa: E402
from absa.training.readers import read_many  # noqa: E402
from benchmarks.datasets import DATASETS, paths  # noqa: E402
from benchmarks.records import write_record  # noqa: E402

#: traffic the model was not made for, one text each (written for this script)
OTHER = {
    "german": "Der Kellner war sehr freundlich und das Essen war ausgezeichnet.",
    "spanish": "La comida estaba fría y el servicio fue lento.",
    "french": "Le serveur était désagréable mais le dessert était délicieux.",
    "medical": "Patient presented with acute dyspnea and bilateral infiltrates.",
    "slang": "lol ngl the vibes were immaculate fr fr no cap",
}


def unknown_share(pipe: object, texts: list[str]) -> dict:
    """Words and unknown words of ``texts`` (each once), as the service counts them."""
    words = unknown = 0
    for text in dict.fromkeys(texts):
        ids = pipe.encode(text, 0, 1).ids  # type: ignore[attr-defined]
        words += len(ids)
        unknown += sum(i == pipe.unk_id for i in ids)  # type: ignore[attr-defined]
    return {"texts": len(dict.fromkeys(texts)), "words": words, "unknown": unknown,
            "share": unknown / words if words else 0.0}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--artifact", type=Path, default=ROOT / "model" / "artifacts" / "default")
    args = ap.parse_args(argv)
    meta = artifact.read_metadata(args.artifact)
    pipe = load_pipeline(args.artifact)
    out: dict[str, dict] = {}
    for ds in DATASETS:
        texts = [e.text for e in read_many([str(paths(ds)["test"])]).examples]
        out[ds] = unknown_share(pipe, texts)
    for name, text in OTHER.items():
        out[name] = unknown_share(pipe, [text])
    print("| texts | n | words | unknown | share |\n|---|---|---|---|---|")
    for name, c in out.items():
        print(f"| {name} | {c['texts']} | {c['words']} | {c['unknown']} | {c['share']:.2%} |")
    name = f"{meta['name']}-{meta['version']}"
    dest = ROOT / "benchmarks" / "results" / "robustness" / f"unknown-words__{name}.json"
    write_record(dest, artifact=name, shares=out, other_texts=OTHER)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
