"""Which top-label map to ship, chosen on dev alone: each kind's ECE (15 bins) out of fold on an
artifact's dev split (5 folds, each fitted on the other four, over ``SPLITS`` fold draws),
pooled and on each source's part. The kinds: the shipped one (isotonic, knots at its blocks'
centres), the plain isotonic step function (knots at its blocks' ends), the shipped kind with
dev's sources weighted equally, the shipped kind once per label answered, the shipped kind
with one more shift down for sentences that read like laptop reviews, the shipped kind
after a temperature of its own for those sentences (as fitted, shrunk halfway to the others',
only where the classifier is sure, and both), and a logistic
recalibration of "the top class is right" on the top probability's logit, alone and with what a
request's text says about it (the share of its words out of the vocabulary, of the aspect's
words, its log length), and on how much the sentence reads like a laptop review (a word
classifier trained on the training sentences dev does not hold, laptops against the rest: the
request carries no domain, and dev's laptop part is the one a global map leaves over-confident).

    python benchmarks/calibration_dev.py --artifact model/artifacts/default [--tests]

Each kind's pooled ECE is also counted against the shipped kind's draw by draw (the same
folds): a kind that replaces the shipped one should be lower on average and in most draws
(docs/benchmarks.md, "Leaner laptop temperatures").

``--tests``: then each kind fitted on all of dev, measured on each test set, for the record
(``ece_tests`` in the result file); the choice is dev's. ``--results``: where the result file
goes (artifacts of one name and version, such as candidates, each need a folder of their own).

Dev is rebuilt from the artifact's metadata (benchmarks/calibration.py), the probabilities are
the served graph's after its temperature. One result file,
benchmarks/results/calibration/dev-oof__<name>-<version>.json, and a Markdown table.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from absa.model import artifact  # noqa: E402
from absa.model.calibration import (  # noqa: E402
    TOP_MAX,
    apply_top_map,
    expected_calibration_error,
    fit_temperature,
    fit_top_map,
    held_out_folds,
    set_top,
    softmax,
)
from absa.model.domain import temper  # noqa: E402
from absa.model.recalibrate import logits  # noqa: E402
from absa.model.text import (  # noqa: E402
    TOKENIZER,
    Token,
    WordPipeline,
    load_pipeline,
    tokenize,
)
from absa.training.readers import read_many  # noqa: E402
from absa.training.records import Example  # noqa: E402
from benchmarks.calibration import RESULTS, rebuild_dev, recorded_files, spans  # noqa: E402
from benchmarks.calibration_options import domain_of, source_weights, step_knots  # noqa: E402
from benchmarks.datasets import DATASETS, paths  # noqa: E402
from benchmarks.records import write_record  # noqa: E402

FOLDS, SPLITS = 5, 20
MIN_PER_LABEL = 100  # dev items a label answered needs for a map of its own
SURE = float(1.0 / (1.0 + np.exp(-2.0)))  # a laptop score of logit 2: the classifier sure
# a kind: (dev probabilities, features, gold) of the fitting folds -> a function that maps
# the held-out fold's (probabilities, features) to calibrated probabilities
Mapping = Callable[[np.ndarray, np.ndarray], np.ndarray]
Kind = Callable[[np.ndarray, np.ndarray, np.ndarray], Mapping]


def knots(kind: str) -> Kind:
    def fit(p: np.ndarray, x: np.ndarray, y: np.ndarray) -> Mapping:
        if kind == "centres":
            xs, ys = fit_top_map(p, y)
        elif kind == "balanced":
            xs, ys = fit_top_map(p, y, weights=source_weights(x[:, -1]))
        else:  # "ends": the step function
            xs, ys = step_knots(p, y)
        return lambda ph, _x: apply_top_map(ph, xs, ys)

    return fit


def by_label(min_items: int = MIN_PER_LABEL) -> Kind:
    """The shipped kind, one map per predicted label (top-label calibration, Gupta & Ramdas,
    ICLR 2022: the map conditioned on the label answered, where a negative answer as sure
    as a positive one may be right less often); a label dev answers fewer than
    ``min_items`` times takes the map of all of dev."""

    def fit(p: np.ndarray, x: np.ndarray, y: np.ndarray) -> Mapping:
        pred, every = p.argmax(1), fit_top_map(p, y)
        maps = [
            fit_top_map(p[pred == k], y[pred == k]) if (pred == k).sum() >= min_items else every
            for k in range(p.shape[1])
        ]

        def apply(ph: np.ndarray, _x: np.ndarray) -> np.ndarray:
            out, answered = ph.copy(), ph.argmax(1)
            for k, (xs, ys) in enumerate(maps):
                if (answered == k).any():
                    out[answered == k] = apply_top_map(ph[answered == k], xs, ys)
            return out

        return apply

    return fit


def laptop_shift(above: float = 0.5) -> Kind:
    """The shipped kind, then the top probability of each sentence that reads like a laptop
    review (laptop score over ``above``) lowered by one number: how much surer than right
    the fitting folds' laptop-like items still are after the map (a group's own shift,
    not a map of its own: dev holds a few hundred such items)."""

    def fit(p: np.ndarray, x: np.ndarray, y: np.ndarray) -> Mapping:
        xs, ys = fit_top_map(p, y)
        q, like = apply_top_map(p, xs, ys), x[:, 3].astype(float) > above
        shift = float(((q.max(1) - (q.argmax(1) == y))[like]).mean()) if like.any() else 0.0

        def apply(ph: np.ndarray, xh: np.ndarray) -> np.ndarray:
            qh = apply_top_map(ph, xs, ys)
            top = qh.max(1) - shift * (xh[:, 3].astype(float) > above)
            return set_top(qh, np.clip(top, 1.0 / ph.shape[1], TOP_MAX))

        return apply

    return fit


def laptop_temperature(above: float = 0.5, shrink: float = 0.0) -> Kind:
    """A temperature of its own for sentences that read like laptop reviews (the shipped
    classifier's laptop score over ``above``) and one for the others, each fitted by NLL on
    the fitting folds' items of its side (dev's laptop part wants a softer T than the rest:
    1.05-1.10 against 0.88-0.92, as the Lap14 test does), then the shipped map fitted on the
    result: what ``absa export --domain-temperature`` ships (``absa.model.domain``).
    ``shrink``: the laptop temperature moved that share of the way to the others' (a few
    hundred dev items fit it; 0 keeps it as fitted)."""

    def fit(p: np.ndarray, x: np.ndarray, y: np.ndarray) -> Mapping:
        like = x[:, 4].astype(float) > above
        z = np.log(np.clip(p, 1e-12, 1.0))  # logits up to a constant per row, after T
        r_in = fit_temperature(z[like], y[like]) if like.any() else 1.0
        r_out = fit_temperature(z[~like], y[~like]) if (~like).any() else 1.0
        r_in += shrink * (r_out - r_in)

        def both(ph: np.ndarray, xh: np.ndarray) -> np.ndarray:
            rows = xh[:, 4].astype(float) > above
            return temper(temper(ph, rows, r_in), ~rows, r_out)

        xs, ys = fit_top_map(both(p, x), y)
        return lambda ph, xh: apply_top_map(both(ph, xh), xs, ys)

    return fit


def logistic(columns: int | list[int], product: bool = False) -> Kind:
    """Logistic regression of correctness on the top logit and text features: the first
    ``columns - 1``, or those listed; ``product``: each times the top logit too."""
    use = list(range(columns - 1)) if isinstance(columns, int) else columns

    def design(p: np.ndarray, x: np.ndarray) -> np.ndarray:
        c = np.clip(p.max(1), 1e-6, 1 - 1e-6)
        top, f = np.log(c / (1 - c)), x[:, use].astype(float)
        return np.column_stack([top, f, *([f * top[:, None]] if product else [])])

    def fit(p: np.ndarray, x: np.ndarray, y: np.ndarray) -> Mapping:
        from sklearn.linear_model import LogisticRegression

        lr = LogisticRegression().fit(design(p, x), p.argmax(1) == y)
        return lambda ph, xh: set_top(ph, lr.predict_proba(design(ph, xh))[:, 1])

    return fit


KINDS: dict[str, Kind] = {
    "top map (shipped: block centres)": knots("centres"),
    "step function (block ends)": knots("ends"),
    "sources weighted equally": knots("balanced"),
    "top map per label answered": by_label(),
    "logistic, top logit": logistic(1),
    "logistic, top logit + out-of-vocabulary words": logistic(2),
    "logistic, + aspect's out-of-vocabulary words, log length": logistic(4),
    "logistic, top logit + laptop score, and their product": logistic([3], product=True),
    "top map, then a shift of its own for laptop-like sentences": laptop_shift(),
    "a temperature of its own for laptop-like sentences, then the top map": laptop_temperature(),
    "the same, the laptop temperature halfway to the others'": laptop_temperature(shrink=0.5),
    "the same, laptop-like where the classifier is sure (logit > 2)": laptop_temperature(SURE),
    "the same, sure and halfway": laptop_temperature(SURE, shrink=0.5),
}
LAPTOPS = ("lap14", "acos-laptop")  # the training sets of laptop reviews (benchmarks.datasets)


def out_of_fold(fit: Kind, p: np.ndarray, x: np.ndarray, y: np.ndarray, seed: int) -> np.ndarray:
    out = p.copy()
    for held in held_out_folds(len(y), FOLDS, seed):
        out[held] = fit(p[~held], x[~held], y[~held])(p[held], x[held])
    return out


def laptop_score(meta: dict, dev: list, pipe: WordPipeline) -> Callable[[list], np.ndarray]:
    """Two laptop scores per example, (N, 2): P(laptop review | sentence) from a logistic
    regression on the words (present or not, scikit-learn's tokens) of the artifact's
    training sentences that dev does not hold; and the same from the classifier ``absa
    export --domain-temperature`` ships (``absa.model.domain``: the model's tokens of the
    served item, test sentences left out of its fit too)."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    from absa.model.export import domain_classifier
    from absa.training.exporting import domain_sentences

    data, held = meta["train"]["data"], {e.text for e in dev}
    laptops = {Path(str(paths(name)["train"])).resolve() for name in LAPTOPS}
    laptop: dict[str, bool] = {}
    for f in recorded_files(data["train"]) + recorded_files(data.get("train_more") or []):
        for e in read_many([f]).examples:
            if e.text not in held:
                laptop[e.text] = laptop.get(e.text, False) or Path(f).resolve() in laptops
    words = CountVectorizer(lowercase=True, min_df=2, binary=True)
    fitted = LogisticRegression(max_iter=2000).fit(
        words.fit_transform(list(laptop)), list(laptop.values())
    )
    sent = domain_sentences(data, dev, "laptop", [str(paths(name)["train"]) for name in LAPTOPS])
    dev_tokens = [pipe.encode(e.text, e.start, e.end).tokens for e in dev]
    shipped, _ = domain_classifier(sent, pipe, dev_tokens)

    def score(examples: list) -> np.ndarray:
        z = shipped.logits([pipe.encode(e.text, e.start, e.end).tokens for e in examples])
        old = fitted.predict_proba(words.transform([e.text for e in examples]))[:, 1]
        return np.column_stack([old, 1.0 / (1.0 + np.exp(-z))])

    return score


def aspect_words(example: Example, tokenizer: int = TOKENIZER) -> list[Token]:
    """The words (of word tokenizer ``tokenizer``, the model's) inside the aspect's span; a
    span inside a word gives its sentence's words."""
    words = tokenize(example.text, tokenizer)
    return [w for w in words if w.start >= example.start and w.end <= example.end] or words


def features(examples: list, pipe: WordPipeline, laptop: np.ndarray) -> np.ndarray:
    """Per example: its words' out-of-vocabulary share, its aspect words', log word count,
    its two laptop scores (``laptop_score``) and (last, for the balanced map) its source."""
    rows = []
    for e, lap in zip(examples, laptop, strict=True):
        words, aspect = pipe.tokenize(e.text), aspect_words(e, pipe.tokenizer)
        rows.append(
            [
                np.mean([w.text.lower() not in pipe.index for w in words]),
                np.mean([w.text.lower() not in pipe.index for w in aspect]),
                np.log(len(words) + 1),
                *lap,
                str(domain_of(e.source)),
            ]
        )
    return np.array(rows, dtype=object)


def measure(p: np.ndarray, x: np.ndarray, y: np.ndarray) -> dict[str, dict[str, list[float]]]:
    """Each kind's out-of-fold ECE per fold draw, pooled ("all") and per source."""
    src = x[:, -1]
    out: dict[str, dict[str, list[float]]] = {}
    for name, fit in KINDS.items():
        got: dict[str, list[float]] = {"all": [], **{s: [] for s in sorted(set(src))}}
        for seed in range(SPLITS):
            q = out_of_fold(fit, p, x, y, seed)
            got["all"].append(expected_calibration_error(q, y))
            for s in sorted(set(src)):
                got[s].append(expected_calibration_error(q[src == s], y[src == s]))
        out[name] = got
    return out


def on_tests(
    model: Path,
    meta: dict,
    dev: tuple[np.ndarray, np.ndarray, np.ndarray],
    pipe: WordPipeline,
    laptop: Callable[[list], np.ndarray],
) -> dict[str, dict[str, float]]:
    """Each kind fitted on all of dev, its ECE on each test set."""
    out: dict[str, dict[str, float]] = {name: {} for name in KINDS}
    for ds in DATASETS:
        examples = read_many([str(paths(ds)["test"])]).examples
        p = softmax(logits(model, spans(examples)), meta["calibration"]["temperature"])
        y = np.array([meta["labels"].index(e.label) for e in examples])
        x = features(examples, pipe, laptop(examples))
        for name, fit in KINDS.items():
            out[name][ds] = expected_calibration_error(fit(*dev)(p, x), y)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--artifact", type=Path, default=ROOT / "model" / "artifacts" / "default")
    ap.add_argument(
        "--tests",
        action="store_true",
        help="then each kind fitted on all of dev, on each test set (a record, not the choice)",
    )
    ap.add_argument("--results", type=Path, default=RESULTS, help="where the result file goes")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    meta = artifact.read_metadata(args.artifact)
    dev = rebuild_dev(meta)
    pipe = load_pipeline(args.artifact)
    if not isinstance(pipe, WordPipeline):
        ap.error(f"{args.artifact}: a word-vocabulary model is needed, not {pipe.kind!r}")
    p = softmax(logits(args.artifact, spans(dev)), meta["calibration"]["temperature"])
    y = np.array([meta["labels"].index(e.label) for e in dev])
    laptop = laptop_score(meta, dev, pipe)
    x = features(dev, pipe, laptop(dev))
    ece = measure(p, x, y)
    sources = [s for s in next(iter(ece.values())) if s != "all"]
    record = {
        "artifact": f"{meta['name']}-{meta['version']}",
        "dev_n": len(y),
        "dev_n_by_source": {s: int((x[:, -1] == s).sum()) for s in sources},
        "folds": FOLDS,
        "splits": SPLITS,
        "ece_before_map": expected_calibration_error(p, y),
        "ece_out_of_fold": ece,
    }
    if args.tests:
        record["ece_tests"] = on_tests(args.artifact, meta, (p, x, y), pipe, laptop)
    out = args.results / f"dev-oof__{record['artifact']}.json"
    write_record(out, **record)
    print(
        f"| kind (dev {len(y)}, out of {FOLDS} folds x {SPLITS}) | all | draws lower than "
        "the shipped kind | " + " | ".join(sources) + " |"
    )
    print("|---" * (3 + len(sources)) + "|")
    shipped = np.array(next(iter(ece.values()))["all"])  # the first kind is the shipped one
    for name, got in ece.items():
        cells = [f"{100 * np.mean(got[s]):.2f} ± {100 * np.std(got[s]):.2f}" for s in got]
        lower = int((np.array(got["all"]) < shipped).sum())  # paired: the same fold draws
        print(f"| {name} | {cells[0]} | {lower} of {SPLITS} | " + " | ".join(cells[1:]) + " |")
    if args.tests:
        print("\n| kind, fitted on all of dev (ECE %) | " + " | ".join(DATASETS) + " |")
        print("|---" * (1 + len(DATASETS)) + "|")
        for name, got in record["ece_tests"].items():
            print(f"| {name} | " + " | ".join(f"{100 * got[d]:.2f}" for d in DATASETS) + " |")


if __name__ == "__main__":
    main()
