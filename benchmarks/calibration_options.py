"""What else could calibrate an artifact, measured per test set (ECE, 15 bins): a temperature
fitted on the test set itself (an oracle: the best any one temperature can do there, not
deployable), and a temperature or vector scaling (a scale and a bias per class) fitted on
the same domain's part of the dev split (deployable only if a request said its domain);
and top-label maps after the global T (``absa export --top-map``): as shipped (isotonic,
knots at block centres, all of dev) and its spread over fits on ``BOOT`` bootstrap
resamples of dev (seed 0), the plain isotonic step function, the shipped kind with each
source's dev part weighted equally, and one fitted on the domain's dev part.

    python benchmarks/calibration_options.py --artifact model/artifacts/default

The artifact must carry its training data in the metadata (as the shipped model does): its
dev split is rebuilt as in benchmarks/calibration.py. One result file per test set,
benchmarks/results/calibration/options__<name>-<version>__<set>.json (skipped when it
exists), and a Markdown table printed for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from absa.model import artifact  # noqa: E402
from absa.model.calibration import (  # noqa: E402
    TOP_MAX,
    apply_top_map,
    expected_calibration_error,
    fit_temperature,
    fit_top_map,
    softmax,
)
from absa.model.recalibrate import logits  # noqa: E402
from absa.training.readers import read_many  # noqa: E402
from benchmarks.calibration import RESULTS, rebuild_dev, spans  # noqa: E402
from benchmarks.datasets import DATASETS, paths  # noqa: E402
from benchmarks.records import write_record  # noqa: E402


def fit_vector(z: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vector scaling: per-class scale w and bias b minimising the NLL of softmax(z * w + b)."""
    zt, yt = torch.as_tensor(z, dtype=torch.float64), torch.as_tensor(y)
    w = torch.ones(z.shape[1], dtype=torch.float64, requires_grad=True)
    b = torch.zeros(z.shape[1], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=200, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(zt * w + b, yt)
        loss.backward()
        return loss

    opt.step(closure)
    return w.detach().numpy(), b.detach().numpy()


BOOT = 30  # bootstrap resamples of dev: how much the map's test ECE moves with its dev


def step_knots(p: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The plain isotonic step function of "the top class is right" on the top probability:
    knots at its blocks' ends (``fit_top_map`` puts one at each block's centre)."""
    from sklearn.isotonic import IsotonicRegression

    step = IsotonicRegression(y_min=1 / p.shape[1], y_max=TOP_MAX, out_of_bounds="clip")
    step.fit(p.max(1), (p.argmax(1) == y).astype(float))
    return step.X_thresholds_, step.y_thresholds_


def source_weights(sources: np.ndarray) -> np.ndarray:
    """Per item, weights that give each source the same total."""
    kinds = set(sources.tolist())
    return np.array([len(sources) / (len(kinds) * (sources == s).sum()) for s in sources])


def top_maps(
    p: np.ndarray, y: np.ndarray, dev_p: np.ndarray, dev_y: np.ndarray, doms: np.ndarray
) -> dict:
    """ECE of the test probabilities ``p`` (after T) under the top-label maps fitted on dev
    (``doms``: each dev item's source, for the map that weighs the sources equally)."""
    rng = np.random.default_rng(0)
    boot = []
    for _ in range(BOOT):
        i = rng.integers(0, len(dev_y), len(dev_y))
        knots = fit_top_map(dev_p[i], dev_y[i])
        boot.append(expected_calibration_error(apply_top_map(p, *knots), y))
    return {
        "ece_top_map": expected_calibration_error(apply_top_map(p, *fit_top_map(dev_p, dev_y)), y),
        "ece_top_map_boot_mean": float(np.mean(boot)),
        "ece_top_map_boot_sd": float(np.std(boot)),
        "ece_top_map_step": expected_calibration_error(
            apply_top_map(p, *step_knots(dev_p, dev_y)), y
        ),
        "ece_top_map_balanced": expected_calibration_error(
            apply_top_map(p, *fit_top_map(dev_p, dev_y, weights=source_weights(doms))), y
        ),
    }


def domain_of(source: str) -> str | None:
    """The benchmark data set a training example came from (its source is path:line)."""
    file = source.rsplit(":", 1)[0]
    return next((d for d, spec in DATASETS.items() if file.endswith(str(spec["train"]))), None)


def options(model: Path, name: str, dev_z: np.ndarray, dev_y: np.ndarray, dev_dom: list) -> dict:
    meta = artifact.read_metadata(model)
    examples = read_many([str(paths(name)["test"])]).examples
    z = logits(model, spans(examples))
    y = np.array([meta["labels"].index(e.label) for e in examples])
    mine = np.array([d == name for d in dev_dom])
    t_oracle = fit_temperature(z, y)
    t_domain = fit_temperature(dev_z[mine], dev_y[mine])
    w, b = fit_vector(dev_z[mine], dev_y[mine])
    vector = softmax(z * w + b)
    t = meta["calibration"]["temperature"]
    dev_p, p = softmax(dev_z, t), softmax(z, t)
    maps = top_maps(p, y, dev_p, dev_y, np.array([str(d) for d in dev_dom]))
    maps["ece_top_map_domain"] = expected_calibration_error(
        apply_top_map(p, *fit_top_map(dev_p[mine], dev_y[mine])), y
    )
    return {
        "artifact": f"{meta['name']}-{meta['version']}",
        "dataset": name,
        "n": len(y),
        "n_domain_dev": int(mine.sum()),
        "ece_global_t": expected_calibration_error(p, y),
        "oracle_t": t_oracle,
        "ece_oracle_t": expected_calibration_error(softmax(z, t_oracle), y),
        "domain_t": t_domain,
        "ece_domain_t": expected_calibration_error(softmax(z, t_domain), y),
        "ece_domain_vector": expected_calibration_error(vector, y),
        "accuracy": float((z.argmax(1) == y).mean()),
        "accuracy_domain_vector": float((vector.argmax(1) == y).mean()),
        **maps,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--artifact", type=Path, default=ROOT / "model" / "artifacts" / "default")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    torch.set_num_threads(1)
    meta = artifact.read_metadata(args.artifact)
    dev = rebuild_dev(meta)
    dev_z = logits(args.artifact, spans(dev))
    dev_y = np.array([meta["labels"].index(e.label) for e in dev])
    dev_dom = [domain_of(e.source) for e in dev]
    RESULTS.mkdir(parents=True, exist_ok=True)
    maps: list[dict] = []
    print(
        "| test set | n | domain dev n | global T (dev) | oracle T (test) | domain T (dev) "
        "| domain vector scaling (dev), accuracy |\n|---|---|---|---|---|---|---|"
    )
    for name in DATASETS:
        out = RESULTS / f"options__{meta['name']}-{meta['version']}__{name}.json"
        if not out.is_file() or "ece_top_map_boot_sd" not in json.loads(out.read_text()):
            rep = options(args.artifact, name, dev_z, dev_y, dev_dom)
            write_record(out, **rep)
        r = json.loads(out.read_text())
        print(
            f"| {name} | {r['n']} | {r['n_domain_dev']} | {r['ece_global_t'] * 100:.2f} | "
            f"{r['ece_oracle_t'] * 100:.2f} (T {r['oracle_t']:.2f}) | "
            f"{r['ece_domain_t'] * 100:.2f} (T {r['domain_t']:.2f}) | "
            f"{r['ece_domain_vector'] * 100:.2f}, {r['accuracy_domain_vector'] * 100:.2f} "
            f"(vs {r['accuracy'] * 100:.2f}) |"
        )
        maps.append(r)
    print(
        "\n| test set | global T | top map (shipped kind) | the same, bootstrap fits | step "
        "function | sources weighted equally | domain's dev only |\n|---|---|---|---|---|---|---|"
    )
    for r in maps:
        boot = f"{r['ece_top_map_boot_mean'] * 100:.2f} ± {r['ece_top_map_boot_sd'] * 100:.2f}"
        cells = ["ece_global_t", "ece_top_map"]
        rest = ["ece_top_map_step", "ece_top_map_balanced", "ece_top_map_domain"]
        print(
            f"| {r['dataset']} | "
            + " | ".join([*(f"{r[k] * 100:.2f}" for k in cells), boot])
            + " | "
            + " | ".join(f"{r[k] * 100:.2f}" for k in rest)
            + " |"
        )


if __name__ == "__main__":
    main()
