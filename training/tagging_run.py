"""A tagger's run directory (``absa train --task extract``): writing, reading, exporting.

    weights.safetensors      the best epoch's weights
    tagger_config.json       the network's shape (TaggerConfig)
    train_config.json        the TagTrainConfig
    pipeline.json, vocab.json, chars.json   the tagger's text pipeline (or tokenizer.json)
    encoder/config.json      a transformer tagger's encoder config (weights are above)
    dev.jsonl                the dev sentences (selection, and the export's parity check)
    history.json             per-epoch loss and dev span scores
    metrics.json             {"dev": best epoch's span scores, "eval": {file: scores}?}
    run.json                 kind "absa-tagger-run", seed, data, split, timing. Written last.

Importing this module imports no torch; loading and exporting a run do.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from absa.model.tagger_config import TaggerConfig
from absa.model.tagtext import TagText, load_tag_text
from absa.training.provenance import code_version

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from absa.model.piece_tagger import PieceTagger
    from absa.model.piecetext import PieceTagText
    from absa.model.tagger import Tagger
    from absa.training.tagging import TagRun

TAG_RUN_KIND = "absa-tagger-run"
#: what an extractor artifact keeps of its run's run.json (the run may be gone)
TAG_TRAIN_KEYS = ("seed", "data", "split", "sentences", "inputs", "environment")
RUN_INFO = "run.json"
WEIGHTS = "weights.safetensors"


def is_tag_run(directory: Path) -> bool:
    path = Path(directory) / RUN_INFO
    if not path.is_file():
        return False
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("kind") == TAG_RUN_KIND
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        return False


def _dump(path: Path, obj: object) -> None:
    path.write_text(json.dumps(obj, indent=1, ensure_ascii=False), encoding="utf-8")


def write_tag_run(run_dir: Path, run: TagRun, dev_texts: list[str], info: Mapping) -> None:
    from safetensors.torch import save_file

    from absa.training.tagging import write_sentences

    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)  # absa train's claim on --out made it
    if any(run_dir.iterdir()):  # never two runs' files in one directory
        raise FileExistsError(f"{run_dir}: not empty; a tagger run is written into a new one")
    save_file({k: v.contiguous() for k, v in run.net.state_dict().items()}, run_dir / WEIGHTS)
    run.config.save(run_dir / "tagger_config.json")
    _dump(run_dir / "train_config.json", run.train_config.to_dict())
    run.text.save(run_dir)
    if run.config.encoder == "transformer":
        from absa.training.embeddings import resolve_transformer
        from absa.training.rundir import save_encoder_config

        save_encoder_config(run_dir, resolve_transformer(run.train_config.transformer))
    write_sentences(run_dir / "dev.jsonl", run.dev_sentences)
    _dump(run_dir / "history.json", run.history)
    _dump(run_dir / "metrics.json", {"dev": run.dev})
    _dump(
        run_dir / RUN_INFO,
        {"kind": TAG_RUN_KIND, "best_epoch": run.best_epoch, "code_version": code_version(),
         "word_tokenizer": run.text.tokenizer, **info},
    )  # fmt: skip


def add_eval(run_dir: Path, reports: Mapping[str, dict]) -> None:
    path = Path(run_dir) / "metrics.json"
    metrics = json.loads(path.read_text(encoding="utf-8"))
    metrics["eval"] = dict(reports)
    _dump(path, metrics)


@dataclass
class LoadedTagRun:
    net: Tagger | PieceTagger
    text: TagText | PieceTagText
    config: TaggerConfig
    dev_texts: list[str]
    info: dict
    metrics: dict


def load_tag_run(run_dir: Path) -> LoadedTagRun:
    from absa.model.piece_tagger import PieceTagger
    from absa.model.tagger import Tagger
    from absa.training.rundir import ENCODER, load_weights

    run_dir = Path(run_dir)
    if not is_tag_run(run_dir):
        raise ValueError(f"{run_dir}: not a tagger run (no {RUN_INFO} of kind {TAG_RUN_KIND})")
    cfg = TaggerConfig.load(run_dir / "tagger_config.json")
    net = PieceTagger(cfg, run_dir / ENCODER) if cfg.encoder == "transformer" else Tagger(cfg)
    load_weights(net, run_dir / WEIGHTS, "tagger_config.json")
    net.eval()
    with (run_dir / "dev.jsonl").open(encoding="utf-8") as f:
        dev = [json.loads(line)["text"] for line in f if line.strip()]
    info = json.loads((run_dir / RUN_INFO).read_text(encoding="utf-8"))
    metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    return LoadedTagRun(net, load_tag_text(run_dir), cfg, dev, info, metrics)


def export_tag_run(
    run_dir: Path,
    out_dir: Path,
    name: str | None = None,
    version: str | None = None,
    quantize: str | None = None,
    expand_vocab: str | Path | None = None,
    expand_top_k: int | None = None,
    command: str | None = None,
) -> dict:
    """The tagger run as an extractor artifact; ``expand_vocab``: vocabulary expansion
    from that vectors file (``training/vocab_expansion.py``); ``command``: the one exporting,
    after the run's own in ``reproduce`` (as ``training.exporting.export_run`` gives it)."""
    from absa.model.tagger_export import export_tagger

    run = load_tag_run(run_dir)
    dev = run.metrics.get("dev") or {}
    if dev.get("predicted") == 0 and dev.get("gold"):  # served, it would find nothing
        log.warning(
            "%s finds no aspect in its dev split (0 spans of %s marked): an extractor made of "
            "it answers every text with none; train it longer or on more data",
            run_dir, dev["gold"],
        )  # fmt: skip
    expansion = None
    if expand_vocab is not None:
        run, expansion = _expanded(run, Path(run_dir), expand_vocab, expand_top_k)
    provenance = {
        "task": "extract",
        "train": {k: run.info.get(k) for k in TAG_TRAIN_KEYS},
        "train_config": json.loads((Path(run_dir) / "train_config.json").read_text("utf-8")),
        "metrics": {"dev": run.metrics["dev"], **run.metrics.get("eval", {})},
        "code_version": run.info.get("code_version"),
        "export_code_version": code_version(),  # the code that builds the graph
        "source_run": str(run_dir),
    }
    if run.info.get("reproduce"):
        provenance["reproduce"] = run.info["reproduce"] + (f"\n{command}" if command else "")
    if expansion is not None:
        provenance["vocab_expansion"] = expansion
    return export_tagger(
        run.net, run.text, run.config, run.dev_texts, out_dir, provenance,
        name=name or "absa-extractor", version=version, quantize=quantize,
    )  # fmt: skip


def _expanded(
    run: LoadedTagRun, run_dir: Path, source: str | Path, top_k: int | None
) -> tuple[LoadedTagRun, dict]:
    """The tagger run with vocabulary expansion from ``source`` (a word-table tagger only;
    ``training/vocab_expansion.py``), and its report."""
    from absa.model.tagger import Tagger
    from absa.model.text import WordPipeline
    from absa.training.vocab_expansion import expand_table, frozen_table

    if not isinstance(run.net, Tagger) or not isinstance(run.text, TagText):
        raise ValueError("vocabulary expansion needs a word-table tagger, not a transformer one")
    train_config = json.loads((run_dir / "train_config.json").read_text(encoding="utf-8"))
    rows, vocab, report = expand_table(
        run.net.words.table.weight.detach().cpu().numpy(),
        run.text.words.words,
        str(train_config["glove"]),
        int(train_config["seed"]),
        source,
        top_k,
    )
    run.net.words.table = frozen_table(rows)
    cfg = replace(run.config, vocab_size=len(rows))
    run.net.cfg = cfg
    words = WordPipeline(vocab, run.text.words.max_len, run.text.words.tokenizer)
    text = TagText(words, run.text.chars)
    return replace(run, text=text, config=cfg), report
