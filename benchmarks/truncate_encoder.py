"""A Hugging Face encoder cut to its first N layers, as a model directory of its own: a
faster (and weaker) encoder for the transformer tagger, to fine-tune where the full one is
too slow to serve (issue #15: under 1 ms per sentence).

    python benchmarks/truncate_encoder.py --layers 2 --out runs/encoders/minilm-l2
    # then a tagger config with  "train": {"transformer": "runs/encoders/minilm-l2"}

The source is the packaged all-MiniLM-L6-v2 unless ``--source`` names a model directory.
The kept layers are the source's own (bottom-up), the embeddings and the tokenizer files
too; ``truncated.json`` records the source, the layer count and the weights' sha256.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absa.model.artifact import sha256_file  # noqa: E402
from absa.training.embeddings import MINILM, resolve_transformer  # noqa: E402

log = logging.getLogger("truncate_encoder")
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
)
RECORD = "truncated.json"


def truncate(source: Path, layers: int, out: Path) -> dict:
    """Write ``source`` with only its first ``layers`` layers to ``out``; the record."""
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(source), local_files_only=True)
    have = model.config.num_hidden_layers
    if not 1 <= layers <= have:
        raise ValueError(f"{source}: has {have} layers; cannot keep {layers}")
    model.encoder.layer = model.encoder.layer[:layers]
    model.config.num_hidden_layers = layers
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out), safe_serialization=True)
    for name in TOKENIZER_FILES:
        if (source / name).is_file():
            shutil.copy(source / name, out / name)
    weights = sha256_file(out / "model.safetensors")
    record = {"source": str(source), "source_layers": have, "layers": layers, "sha256": weights}
    (out / RECORD).write_text(json.dumps(record, indent=1))
    log.info("%s: %d of %d layers -> %s (%s)", source, layers, have, out, weights[:8])
    return record


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, required=True, help="how many bottom layers to keep")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--source", default=MINILM, help="a model directory (default: packaged MiniLM)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    try:
        truncate(resolve_transformer(args.source), args.layers, args.out)
    except (FileNotFoundError, ValueError) as e:
        sys.exit(f"truncate_encoder: {e}")


if __name__ == "__main__":
    main()
