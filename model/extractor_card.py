"""The model card (README.md) of an extractor artifact, made from its metadata. No torch."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from absa.model.card import CARD

LANGUAGE = (
    "English: the word vectors and tokenizer it is built on are English ones (GloVe, "
    "all-MiniLM-L6-v2's) unless its run named others; other languages are not measured."
)

#: the corpora a training file's directory names (a path part, lower case) -> its citation;
#: the sets of ../shared/data/README.md
CORPORA: tuple[tuple[str, str], ...] = (
    ("semeval14", "SemEval-2014 Task 4 (Pontiki et al. 2014)"),
    ("semeval15", "SemEval-2015 Task 12 (Pontiki et al. 2015)"),
    ("mams", "MAMS (Jiang et al., EMNLP 2019)"),
    ("acos-laptop", "ACOS laptop (Cai et al., ACL 2021)"),
    ("twitter", "Twitter (Dong et al., ACL 2014)"),
    ("television", "Television reviews (PyABSA's ABSADatasets)"),
    ("tshirt", "Men's T-shirt reviews (PyABSA's ABSADatasets)"),
    ("yelp", "Yelp restaurant reviews (PyABSA's ABSADatasets)"),
)


def _paths(data: Mapping[str, Any], role: str) -> list[str]:
    listed = data.get(role)
    if not isinstance(listed, list):
        return []
    return [str(f["path"]) for f in listed if isinstance(f, Mapping) and "path" in f]


def _corpora(files: list[str]) -> tuple[list[str], int]:
    """The corpora ``files`` come from (by a directory in their path), and how many are of
    none of them."""
    named: list[str] = []
    others = 0
    for path in files:
        parts = {part.lower() for part in Path(path).parts}
        cited = [c for key, c in CORPORA if key in parts]
        if not cited:
            others += 1
        named += [c for c in cited if c not in named]
    return named, others


def _train_files(train: Mapping[str, Any]) -> list[str]:
    data = train.get("data") if isinstance(train, Mapping) else None
    return _paths(data, "train") if isinstance(data, Mapping) else []


def domain_limit(train: Mapping[str, Any]) -> str:
    """The card's line on what counts as an aspect: its training data's annotation, named
    where the run recorded the corpora."""
    named, _ = _corpora(_train_files(train))
    which = f" ({', '.join(named)})" if named else ""
    return (
        f"What counts as an aspect follows the annotation of its training data{which}; "
        "other domains get fewer and worse spans: measure them (`absa evaluate`)."
    )


def data_statement(train: Mapping[str, Any]) -> str:
    """What the run's record (metadata "train") says of its data: the corpora its training
    files come from, and whether sentences of the --exclude files were dropped from
    training; no claim where the run recorded nothing."""
    files = _train_files(train)
    if not files:
        return "Data: not recorded by the run."
    data = train["data"]
    named, others = _corpora(files)
    if named:
        text = f"Data: {', '.join(named)}, as redistributed for research"
        if others:
            text += f"; and {others} other file{'s' if others > 1 else ''} listed above"
    else:
        text = "Data: the training files listed above"
    exclude = _paths(data, "exclude")
    if exclude:
        listed = ", ".join(f"`{p}`" for p in exclude)
        return (
            f"{text}. Training sentences that also occur in {listed} (--exclude) are dropped "
            "from training."
        )
    return (
        f"{text}. No training sentence was dropped for occurring in a test set: the run had no "
        "--exclude files."
    )


INTENDED_USE = (
    "Find the aspect terms (the things an opinion is about: 'burger', 'battery life') in a "
    "sentence of a short English review, so that each can be classified by a sentiment model. "
    "Meant for aggregate analysis of many reviews, not for decisions about a person."
)

LIMITS = [
    "It finds explicit terms only: an opinion about something the text never names "
    "('too expensive' about the price) yields no aspect.",
    "Confidence is the probability that the tagger marks exactly the span it decoded (B, "
    "then I's, then a word that is not I): under the per-word tag probabilities, or with a "
    "CRF summed over every allowed tag sequence (forward-backward); it is not calibrated "
    "against held-out data. A quote or bracket without its partner, an invisible "
    "character or a pictograph (an emoji) at the decoded span's edge is left out of the "
    "term; the confidence stays that of the decoded span.",
    "Text longer than the window is tagged in windows and again in windows across each "
    "seam; every word takes its tags from the window where it sits furthest from an edge, "
    "so a term across a seam is one term.",
]


def _fmt(x: Any) -> str:
    return f"{float(x):.2f}" if isinstance(x, int | float) else "?"


def _network(cfg: Mapping[str, Any]) -> str:
    if cfg.get("encoder") == "transformer":
        net = (
            f"a pretrained transformer encoder (hidden size {cfg.get('embed_dim')}) fine-tuned "
            "on word pieces, each word read at its first piece, a linear layer"
        )
    else:
        chars = "+ a character CNN " if cfg.get("char_vocab_size") else ""
        net = (
            f"a BiLSTM ({cfg.get('hidden_size')} per direction, {cfg.get('layers', 1)} "
            f"layer(s)) over GloVe word vectors {chars}"
        )
    crf = " with a CRF's learned transition scores" if cfg.get("crf") else ""
    return (
        f"Aspect term extractor: {net.rstrip()} tagging words B / I / O, decoded by "
        f"BIO-constrained Viterbi{crf}; served with onnxruntime."
    )


def render_extractor(metadata: Mapping[str, Any]) -> str:
    cfg = metadata.get("model_config") or {}
    metrics = metadata.get("metrics") or {}
    parity = metadata.get("parity") or {}
    lines = [
        f"# {metadata.get('name', 'absa-extractor')} {metadata.get('version', '?')}",
        "",
        _network(cfg),
        "",
        "## Intended use",
        "",
        INTENDED_USE,
        "",
        "## Language",
        "",
        LANGUAGE,
        "",
        "## Training data",
        "",
        *[
            f"- `{f.get('path')}` (sha256 {str(f.get('sha256', ''))[:12]}...)"
            for f in ((metadata.get("train") or {}).get("data") or {}).get("train", [])
        ],
        "",
        data_statement(metadata.get("train") or {}),
        "",
        "## Metrics (exact-span precision / recall / F1, %)",
        "",
        "| set | P | R | F1 |",
        "|---|---|---|---|",
    ]
    for name, rep in metrics.items():
        if isinstance(rep, Mapping) and "f1" in rep:
            lines.append(
                f"| {name} | {_fmt(rep.get('precision'))} | {_fmt(rep.get('recall'))} "
                f"| {_fmt(rep.get('f1'))} |"
            )
    seg = {
        n: r.get("sentences") for n, r in metrics.items() if str(n).startswith(("rest14", "lap14"))
    }
    if seg:
        counts = ", ".join(f"{n} {k}" for n, k in seg.items() if isinstance(k, int))
        lines += [
            "",
            "The SemEval-2014 test files (`.seg`) hold only the sentences with an aspect "
            f"({counts} of 800 each): on every sentence of a review precision is lower, by "
            "about the rate at which the aspect-free check below finds spans.",
        ]
    bench = metadata.get("benchmark") or {}
    held, e2e, lat = bench.get("heldout_empty"), bench.get("end_to_end") or {}, bench.get("latency")
    if held:
        lines += [
            "",
            f"Held-out aspect-free training sentences: nothing found in "
            f"{held['sentences_with_none_found']} of {held['sentences']}, "
            f"{held['false_positives']} spans found in all.",
        ]
    for name, rep in e2e.items():
        # the sentiment model shipped then: the shipped one changes, and these numbers with it
        model = rep.get("sentiment_model") or "shipped then"
        lines.append(
            f"End to end on {name} test (extracted, then classified by the sentiment model "
            f"{model}; a triple counts when span and label are right): P "
            f"{_fmt(rep['precision'])} / R {_fmt(rep['recall'])} / F1 {_fmt(rep['f1'])}."
        )
    if lat:
        lines.append(
            f"Latency (onnxruntime, {lat['threads']} threads, one sentence per call): p50 "
            f"{_fmt(lat['batch1_p50_ms'])} ms, p99 {_fmt(lat['batch1_p99_ms'])} ms."
        )
    lines += [
        "",
        f"Parity: onnxruntime vs torch on {parity.get('n', '?')} dev windows, max |diff| "
        f"{parity.get('max_abs_diff', '?')}, {parity.get('prediction_mismatches', '?')} "
        "decoded differently.",
        *_quantization(metadata.get("quantization")),
        "",
        "## Limits",
        "",
        f"- {LIMITS[0]}",
        f"- {domain_limit(metadata.get('train') or {})}",
        *[f"- {x}" for x in LIMITS[1:]],
        "",
    ]
    if metadata.get("reproduce"):
        lines += ["## Reproduce", "", "```bash", str(metadata["reproduce"]), "```", ""]
    return "\n".join(lines)


def _quantization(q: Mapping[str, Any] | None) -> list[str]:
    if not q:
        return []
    return [
        "",
        f"Quantised ({q['type']}, after the parity check): {q['windows_decoded_differently']} "
        f"of {q['dev_windows']} dev windows decode differently from the fp32 graph "
        f"({q['spans_only_fp32']} spans lost, {q['spans_only_int8']} new), "
        f"{q['bytes_fp32'] / 1e6:.1f} -> {q['bytes_int8'] / 1e6:.1f} MB.",
    ]


def write_extractor_card(directory: Path, metadata: Mapping[str, Any]) -> None:
    (Path(directory) / CARD).write_text(render_extractor(metadata), encoding="utf-8")
