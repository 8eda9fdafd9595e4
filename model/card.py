"""The model card: README.md in every artifact directory, made from the artifact's metadata.

``absa export`` (and so every registry version, which is an exported artifact moved in)
writes it with ``write_card`` before the checksums are recorded, so the card is one of the
artifact's hashed files. The shipped model's richer card (benchmarks/default_model.py)
reuses ``LANGUAGE``, ``INTENDED_USE`` and ``limits``. No torch: metadata in, Markdown out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

CARD = "README.md"

LANGUAGE = (
    "English only. The word vocabulary and tokenizer are English, as is the training data "
    "(below); text in another language gets answers, but they mean nothing."
)

INTENDED_USE = (
    "Classify the sentiment (negative / neutral / positive) expressed towards an aspect "
    "that the caller names in a sentence of a short English review or post, e.g. 'burger' "
    "in 'The fries were soggy but the burger was great'; with the attention over the words "
    "as a hint of what the answer rests on. Meant for aggregate analysis of many reviews "
    "(which aspects do customers praise or criticise), not for decisions about a person."
)


CATEGORY_USE = (
    "Classify the sentiment (negative / neutral / positive) a short English review sentence "
    "expresses towards an aspect category the caller names from the model's list (e.g. "
    "'food' or 'service' in 'The fries were soggy but the staff was lovely'), whether or not "
    "the sentence names the aspect; with the attention over the words as a hint of what the "
    "answer rests on. Meant for aggregate analysis of many reviews, not for decisions about "
    "a person."
)


def limits(
    max_len: int | None = 128,
    domains: str | None = None,
    category: bool = False,
    expansion: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
    weakest: str | None = None,
) -> list[str]:
    """The limits every model of this project shares (a list of Markdown bullet texts);
    ``category``: those of an aspect-category model; ``expansion``: the metadata's
    ``vocab_expansion``, when words it never trained on were given rows; ``metadata``: the
    artifact's, for what its vocabulary holds (its encoder, size and the vectors' words) and
    whether its probabilities are calibrated; ``weakest``: a sentence on its weakest label,
    from its test scores."""
    trained_on = domains or "the domains of its training data"
    finds = (
        "It does not find which categories a sentence talks about: the caller names them, "
        "from the model's list; a category the sentence does not mention still gets a label, "
        "about as confidently as one it mentions (`python benchmarks/category_unmentioned.py "
        "--artifact DIR` measures it): ask only about the categories a text mentions, or weigh "
        "such answers before adding them up."
        if category
        else "It does not find aspects: the caller names them (a term, or a term pinned to its "
        "span). A term that occurs several times gets one answer per occurrence."
    )
    window = "from the start of the text" if category else "centred on the aspect"
    meta = metadata or {}
    cal = meta.get("calibration")
    calibrated = not meta or (isinstance(cal, Mapping) and "temperature" in cal)
    return [
        finds,
        f"Text is read in a window of {max_len or 128} tokens {window}; words "
        "outside it are not seen.",
        _vocabulary_limit(expansion, meta),
        f"Accuracy holds on text like {trained_on}; on other domains (legal, medical, "
        "long documents, transcripts) expect it to be lower, and measure it "
        "(`absa evaluate`).",
        "Three labels only: mixed or conflicting sentiment towards one aspect gets one of "
        "them; sarcasm, negation over long distances and comparisons are frequent errors.",
        *([weakest] if weakest else []),
        *(
            []
            if calibrated
            else [
                "Its probabilities are not calibrated (no temperature was fitted at export): "
                "read them as scores that rank answers, not as how often answers that sure "
                "are right."
            ]
        ),
        "The attention weights show what the model looked at, not a proof of why it "
        "answered; do not read them as an explanation a person can be held to.",
        "It inherits the biases of its training data; check it on your own data before "
        "relying on it.",
    ]


def _vocabulary_limit(expansion: Mapping[str, Any] | None, metadata: Mapping[str, Any]) -> str:
    """What its vocabulary holds, as the metadata records it: a transformer's word pieces;
    a word model's training words and the vectors' ``glove_top_k`` most frequent (20,000 by
    default: not only the words it saw in training), and those an expansion added."""
    cfg = metadata.get("model_config") or {}
    top_k = (metadata.get("train_config") or {}).get("glove_top_k")
    if cfg.get("encoder") == "transformer":
        return (
            "Words are read as the word pieces of the encoder's tokenizer, so none is out of "
            "vocabulary; a rare word is read through its pieces."
        )
    if not expansion:
        size = cfg.get("vocab_size")
        if not isinstance(size, int) or not isinstance(top_k, int):  # not recorded
            return "Words outside its vocabulary read as one unknown word."
        more = f" and the vectors' {top_k} most frequent" if top_k else ""
        if top_k and size < top_k:  # a vectors file of fewer words than glove_top_k asked
            more = f" and every word of its vectors (fewer than the {top_k} asked)"
        return (
            f"Its vocabulary is {size} words: those of its training data{more}; any other "
            "word reads as one unknown word."
        )
    return (
        f"Words it never saw in training read through vectors mapped into its tuned table "
        f"({expansion.get('added', '?')} words added at export, a linear map fitted on the "
        f"{expansion.get('fitted_on', '?')} trained ones, R² {expansion.get('r2', '?')}): "
        "less surely than trained words. Words outside its vocabulary of "
        f"{expansion.get('vocab_size', '?')} read as one unknown word."
    )


def _pct(x: Any) -> str:
    return f"{float(x) * 100:.2f}" if isinstance(x, int | float) else "?"


def _data_lines(train: Mapping[str, Any]) -> list[str]:
    """Every file the run read, as its record names them (train, train_more, dev, exclude,
    transfer, the retraining job's new, the --config file, ...), then the word vectors and
    the teachers: path and sha256."""
    data = train.get("data") or {}
    files = [
        (role, f)
        for role, listed in data.items()
        if isinstance(listed, list)
        for f in listed
        if isinstance(f, Mapping) and "path" in f and "sha256" in f
    ]
    if isinstance(train.get("vectors"), Mapping):
        files.append(("vectors", train["vectors"]))
    teacher = train.get("teacher")
    if isinstance(teacher, Mapping):
        more = teacher.get("more") or []
        files += [("teacher", t) for t in (teacher, *more) if isinstance(t, Mapping)]
    return [
        f"  - {role}: `{f.get('path')}` (sha256 {str(f.get('sha256', ''))[:12]}...)"
        for role, f in files
    ]


def layers_words(cfg: dict) -> str:
    """', 2 layers' for a stacked network (', self-attention after the first' where it runs
    there), nothing for one layer."""
    n = cfg.get("layers", 1)
    if not isinstance(n, int) or n < 2:
        return ""
    between = cfg.get("self_attention_at") == "between"
    return f", {n} layers" + (", self-attention after the first" if between else "")


def _code(metadata: Mapping[str, Any]) -> str:
    """The code the run trained with: its version, or each session's where a resumed run
    trained on more than one."""
    versions = (metadata.get("train") or {}).get("code_versions") or []
    if isinstance(versions, list) and len(versions) > 1:
        return "trained in sessions on code versions " + ", ".join(f"`{v}`" for v in versions)
    return f"code version `{metadata.get('code_version')}`"


def served_dev(metadata: Mapping[str, Any]) -> dict[str, Any] | None:
    """The dev scores of the graph as served, as export measured them on the run's dev
    aspects: the int8 graph's where it is quantised, else the fp32 graph's (``macro_f1``
    None where the export predates its record); None where export recorded neither."""
    quant, parity = metadata.get("quantization"), metadata.get("parity") or {}
    if isinstance(quant, Mapping):
        acc, f1 = quant.get("dev_accuracy_int8"), quant.get("dev_macro_f1_int8")
    else:
        acc, f1 = parity.get("dev_accuracy_onnx"), parity.get("dev_macro_f1_onnx")
    if acc is None:
        return None
    return {"n": parity.get("n"), "accuracy": acc, "macro_f1": f1}


def _served_note(metadata: Mapping[str, Any]) -> list[str]:
    """Where export changed the network (a vocabulary expansion, int8): the run's scores are
    the trained network's, not what ``absa evaluate`` measures on the directory; the served
    graph's dev scores, as export measured them."""
    quant = metadata.get("quantization")
    changes = []
    if metadata.get("vocab_expansion"):
        changes.append("the vocabulary expansion at export")
    if isinstance(quant, Mapping):
        changes.append(f"{quant.get('type', 'int8')} quantisation")
    if not changes:
        return []
    served = served_dev(metadata) or {}
    n = served.get("n") or "?"
    return [
        f"- The scores above are the trained network's, before {' and '.join(changes)}; as "
        f"served, this directory scores accuracy {_pct(served.get('accuracy'))} %, macro-F1 "
        f"{_pct(served.get('macro_f1'))} % on the {n} dev aspects."
    ]


def _recalibrated_lines(metadata: Mapping[str, Any], commands: bool) -> list[str]:
    """A recalibrated artifact (``recalibrated_from``): which source it was made from and
    how; the ``reproduce`` commands rebuild that source, not this graph."""
    source = metadata.get("recalibrated_from")
    if not isinstance(source, Mapping):
        return []
    cal = metadata.get("calibration") or {}
    fitted_on = cal.get("fitted_on", "a dev set") if isinstance(cal, Mapping) else "a dev set"
    return [
        f"This artifact was recalibrated from version {source.get('version')} (model.onnx "
        f"sha256 {str(source.get('sha256', ''))[:12]}..., exported without a temperature): "
        "the same graph with the division by T added, T fitted on the source's logits on "
        f"{fitted_on} by `absa.model.recalibrate.recalibrate(SOURCE, OUT, dev spans, dev "
        f'labels, "{metadata.get("version")}")` (the shipped default: `python '
        "benchmarks/calibration.py --artifact DIR --reissue VERSION`, which rebuilds the "
        "dev split from the recorded data and seed)."
        + (" The commands below rebuild the source." if commands else ""),
        "",
    ]


def _reproduce_lines(metadata: Mapping[str, Any]) -> list[str]:
    """The commands that train and export the model again (the metadata's ``reproduce``);
    for a recalibrated artifact, first where it was recalibrated from."""
    commands = metadata.get("reproduce")
    recalibrated = _recalibrated_lines(metadata, bool(commands))
    if not commands:
        return ["## Reproduce", "", *recalibrated] if recalibrated else []
    trained, exported = metadata.get("code_version"), metadata.get("export_code_version")
    code = f"`{trained}`"
    if exported and exported != trained:  # a run exported again on later code
        code = f"`{trained}` for the training and `{exported}` for the export"
    return [
        "## Reproduce",
        "",
        *recalibrated,
        f"With the code at {code} and the files of the training "
        "data above (by their sha256), from where they ran:",
        "",
        "```bash",
        str(commands),
        "```",
        "",
    ]


def calibration_lines(metadata: Mapping[str, Any]) -> list[str]:
    """The card's "Calibration" section (Markdown lines): the temperature and the expected
    calibration error before and after it, on dev and on each test set the metadata
    records; no lines for an artifact from before calibration."""
    cal = metadata.get("calibration")
    if not isinstance(cal, Mapping):
        return []
    head = ["## Calibration", ""]
    if not cal.get("fitted", True):
        return [*head, "None: exported with `--no-calibrate` (temperature 1).", ""]
    sets = {"dev": cal.get("dev"), **(cal.get("test") or {})}
    mapped = isinstance(cal.get("top_map"), Mapping)
    # an int8 artifact serves the int8 graph: calibration.dev is the fp32 graph's (where T
    # and the map were fitted); the served graph's dev ECE is the quantisation record's
    quant = metadata.get("quantization")
    if not isinstance(quant, Mapping):
        quant = {}
    served = quant.get("dev_ece_int8_out_of_fold" if mapped else "dev_ece_int8")
    if isinstance(served, int | float) and isinstance(sets.get("dev"), Mapping):
        dev_rep = sets.pop("dev")
        sets = {
            "dev, fp32 graph": dev_rep,
            f"dev, {quant.get('type', 'int8')} graph as served": {
                "n": dev_rep.get("n", "?"),
                "ece_after": served,
                "served_only": True,
            },
            **sets,
        }
    rows = [
        f"| {name} | {rep.get('n', '?')} | "
        + ("- | " if rep.get("served_only") else f"{_pct(rep.get('ece_before'))} | ")
        + (
            ("- | " if rep.get("served_only") else f"{_pct(rep.get('ece_temperature'))} | ")
            if mapped
            else ""
        )
        + f"{_pct(rep.get('ece_after'))} | "
        + f"{_pct(rep['ece_floor']) if 'ece_floor' in rep else '-'} |"
        for name, rep in sets.items()
        if isinstance(rep, Mapping)
    ]
    source = metadata.get("recalibrated_from")
    if isinstance(source, Mapping):  # fitted after export, on the dev set the caller gave
        dev = cal.get("dev")
        if not isinstance(dev, Mapping):
            dev = {}
        where = (
            f"fitted on {cal.get('fitted_on', 'a dev set')} ({dev.get('n', '?')} items, "
            f"negative log-likelihood) when version {source.get('version')} was recalibrated"
        )
    else:
        where = "fitted on the dev split (negative log-likelihood)"
    text = (
        f"Temperature scaling: the probabilities are softmax(logits / T), T = "
        f"{float(cal.get('temperature', 1)):.3f}, {where}; no prediction changes."
    )
    if cal.get("caveat"):  # no best fit: every dev answer right, or T at its bound
        text += f" Note: {cal['caveat']}."
    dom = cal.get("domain")
    if isinstance(dom, Mapping):
        files = ", ".join(f"`{Path(str(f.get('path', '?'))).name}`" for f in dom.get("files") or [])
        text += (
            f" Then, for requests whose words read as {dom.get('name', 'one domain')} reviews "
            f"(a word classifier fitted on the training sentences of {files or 'its files'}, "
            f"dev's left out: `domain.json`), a temperature of their own, t = "
            f"{float(dom.get('temperature', 1)):.3f} on the probabilities after T (fitted on "
            f"the {dom.get('dev_items', '?')} dev items that read so, whose ECE it takes from "
            f"{_pct(dom.get('dev_ece_before'))} to {_pct(dom.get('dev_ece_after'))}), and the "
            f"other requests t = {float(dom.get('outside_temperature', 1)):.3f} (fitted on the "
            "other dev items); no prediction changes."
        )
    if mapped:
        text += (
            f" Then a top-label map ({len(cal['top_map'].get('x', []))} knots, fitted on the "
            "same dev split: isotonic regression of whether the top class is right on its "
            "probability) moves each answer's top probability to how often answers that sure "
            "were right, the other classes keeping their proportions; no prediction changes. "
            "Its dev ECE is measured out of fold. model.onnx carries T; absa's runtime "
            "applies the map (its knots: `calibration.top_map` in metadata.json)."
        )
    text += (
        f" Expected calibration error ({cal.get('bins', '?')} equal-width confidence bins, %), "
        + (
            "without calibration, with T alone and as served (T"
            + (", the domain's" if isinstance(dom, Mapping) else "")
            + " and the map)"
            if mapped
            else "without and with T"
        )
        + "; the floor is what a perfectly calibrated model would show on as many items "
        "(the estimator's noise), where measured:"
    )
    head_row = "| data | n | ECE before | " + ("ECE T only | " if mapped else "")
    return [
        *head,
        text,
        "",
        head_row + "ECE after | floor |",
        "|---|---|---|---|---|" + ("---|" if mapped else ""),
        *rows,
        "",
    ]


def render(metadata: Mapping[str, Any], max_len: int | None = None) -> str:
    """The Markdown card of an artifact, from its metadata (and its pipeline's max_len)."""
    name, version = metadata.get("name", "absa"), metadata.get("version", "?")
    cfg = metadata.get("model_config") or {}
    train = metadata.get("train") or {}
    metrics = metadata.get("metrics") or {}
    dev = metrics.get("dev") or {}
    parity = metadata.get("parity") or {}
    labels = metadata.get("labels") or cfg.get("labels") or []
    vectors = train.get("vectors")  # a file given by path; the packaged GloVe otherwise
    if cfg.get("encoder", "embedding") != "embedding":
        encoder = cfg["encoder"]
    elif isinstance(vectors, Mapping):
        encoder = f"the word vectors of `{vectors.get('path')}`"
    else:
        encoder = "GloVe word vectors"
    category = metadata.get("task") == "category"
    what = (
        "An aspect-category sentiment model of the absa project: given a sentence and one of "
        "its categories below, it answers"
        if category
        else "An aspect-level sentiment model of the absa project: given a sentence and an "
        "aspect in it, it answers"
    )
    cats = metadata.get("categories") or []
    lines = [
        f"# {name} {version}",
        "",
        f"{what} one of the labels below with probabilities, and the attention over the words.",
        "",
        f"- **Language**: {LANGUAGE}",
        f"- **Labels**: {', '.join(labels)}.",
        *([f"- **Categories** (v_a: a learned vector each): {', '.join(cats)}."] if cats else []),
        f"- **Network**: preset `{metadata.get('preset')}`: "
        f"{'bidirectional ' if cfg.get('bidirectional') else ''}{str(cfg.get('cell', '?')).upper()}"
        f" (hidden {cfg.get('hidden_size', '?')}{layers_words(cfg)}), "
        f"{cfg.get('attention', '?')} aspect attention, "
        f"on {encoder}.",
        f"- **Created**: {metadata.get('created')} from the training run "
        f"`{metadata.get('source_run')}` ({_code(metadata)}, seed {train.get('seed', '?')}).",
        "",
        "## Intended use",
        "",
        CATEGORY_USE if category else INTENDED_USE,
        "",
        "## Limits",
        "",
        *[
            f"- {x}"
            for x in limits(
                max_len,
                category=category,
                expansion=metadata.get("vocab_expansion"),
                metadata=metadata,
            )
        ],
        "",
        "## Training data",
        "",
        f"- {train.get('n_train', '?')} training aspects, {train.get('n_dev', '?')} dev aspects "
        f"({train.get('dev_split', 'dev split not recorded')}); labels of the training "
        f"data as read, before the dev split: {json.dumps(train.get('label_counts'))}.",
        *_data_lines(train),
        "",
        "## Evaluation",
        "",
        f"- Dev (used to select the epoch): accuracy {_pct(dev.get('accuracy'))} %, macro-F1 "
        f"{_pct(dev.get('macro_f1'))} % on {dev.get('n', '?')} aspects.",
    ]
    for path, rep in (metrics.get("eval") or {}).items():
        if isinstance(rep, Mapping):
            lines.append(
                f"- `{path}`: accuracy {_pct(rep.get('accuracy'))} %, macro-F1 "
                f"{_pct(rep.get('macro_f1'))} % on {rep.get('n', '?')} aspects."
            )
    quant = metadata.get("quantization")
    if parity:
        graph = "the fp32 graph" if isinstance(quant, Mapping) else "onnxruntime"
        lines.append(
            f"- Export: {graph} matches torch on {parity.get('n', '?')} dev aspects (max "
            f"|diff| {float(parity.get('max_abs_diff', 0)):.1e}, "
            f"{parity.get('prediction_mismatches', '?')} predictions differ)."
        )
    if isinstance(quant, Mapping):
        # a recalibrated artifact's record has no max |diff| (measured at the old T): none
        # is stated rather than 0
        diff = quant.get("max_abs_prob_diff")
        lines.append(
            f"- Served quantized ({quant.get('type')}): against the fp32 graph, "
            f"{quant.get('changed_predictions', '?')} dev predictions change"
            + (f" (max |diff| {float(diff):.3f})" if isinstance(diff, int | float) else "")
            + f"; dev accuracy {_pct(quant.get('dev_accuracy_int8'))} %"
            + (
                f", macro-F1 {_pct(quant['dev_macro_f1_int8'])} %"
                if "dev_macro_f1_int8" in quant
                else ""
            )
            + "."
        )
    lines += [
        *_served_note(metadata),
        "",
        "Measure it on your own data before use: "
        "`absa evaluate --model THIS_DIRECTORY --data FILE`.",
        "",
        *calibration_lines(metadata),
        *_reproduce_lines(metadata),
    ]
    return "\n".join(lines)


def write_card(directory: Path | str, metadata: Mapping[str, Any]) -> Path:
    """Write ``directory/README.md`` from ``metadata`` (and the directory's pipeline.json)."""
    directory = Path(directory)
    max_len = None
    try:
        max_len = int(json.loads((directory / "pipeline.json").read_text())["max_len"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    path = directory / CARD
    path.write_text(render(metadata, max_len), encoding="utf-8")
    return path
