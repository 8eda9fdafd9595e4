"""The batch retraining job: validate -> drift check -> train -> export -> evaluate -> gate.

    absa retrain --config retrain.toml

The challenger is trained and exported (with the parity check) in the registry's scratch
space, evaluated beside the current champion on the same fixed evaluation sets, added to
the registry as a new immutable version, and promoted only if it passes the gate. Nothing
the service reads changes until that last atomic step; a failed or killed job leaves the
champion and the registry as they were.
"""

from __future__ import annotations

import json
import logging
import shutil
import tomllib
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from model.registry import Registry
from training.checkpoint import code_version, sha256_file
from training.evaluate import evaluate
from training.presets import load_config
from training.readers import label_counts, read_many
from training.records import DataError, Example

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Gate:
    max_accuracy_drop: float = 0.005  # challenger acc >= champion acc - this, on every set
    max_macro_f1_drop: float = 0.01  # challenger F1 >= champion F1 - this, on every set
    min_accuracy: float = 0.0  # absolute floor (what a first model must reach)


@dataclass(frozen=True)
class RetrainConfig:
    base: list[str]
    registry: Path
    new: list[str] = field(default_factory=list)
    dev: list[str] = field(default_factory=list)
    eval: dict[str, str] = field(default_factory=dict)
    preset: str = "fast"
    model_config: str | None = None  # a JSON/TOML file of preset overrides
    seed: int = 1
    epochs: int | None = None
    keep: int = 5
    skip_invalid: bool = False
    drift_threshold: float = 0.1  # total variation distance of label shares that warns
    gate: Gate = field(default_factory=Gate)

    @classmethod
    def load(cls, path: Path) -> RetrainConfig:
        path = Path(path)
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as e:
            raise ValueError(f"{path}: {e}") from None
        base_dir = path.parent
        data = raw.pop("data", {})
        gate = Gate(**raw.pop("gate", {}))

        def rel(p: str) -> str:
            return str((base_dir / p).resolve()) if not Path(p).is_absolute() else p

        try:
            cfg = cls(
                base=[rel(p) for p in data.get("base", [])],
                new=[rel(p) for p in data.get("new", [])],
                dev=[rel(p) for p in data.get("dev", [])],
                eval={k: rel(v) for k, v in raw.pop("eval", {}).items()},
                registry=Path(rel(raw.pop("registry", "models"))),
                model_config=rel(raw.pop("model_config")) if raw.get("model_config") else None,
                gate=gate,
                **raw,
            )
        except TypeError as e:
            raise ValueError(f"{path}: {e}") from None
        if not cfg.base and not cfg.new:
            raise ValueError(f"{path}: [data] names no training files (base, new)")
        if not cfg.eval:
            raise ValueError(f"{path}: [eval] names no evaluation sets")
        return cfg


def label_shares(counts: dict[str, int]) -> dict[str, float]:
    total = sum(counts.values()) or 1
    return {k: v / total for k, v in counts.items()}


def drift(old: dict[str, int], new: dict[str, int]) -> float:
    """Total variation distance between two label distributions (0 = same, 1 = disjoint)."""
    a, b = label_shares(old), label_shares(new)
    return 0.5 * sum(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in set(a) | set(b))


def check_gate(gate: Gate, challenger: dict, champion: dict | None) -> tuple[bool, list[str]]:
    reasons, ok = [], True
    for name, c in challenger.items():
        if c["accuracy"] < gate.min_accuracy:
            ok = False
            reasons.append(f"{name}: accuracy {c['accuracy']:.4f} < floor {gate.min_accuracy:.4f}")
        if champion is None:
            continue
        ch = champion[name]
        if c["accuracy"] < ch["accuracy"] - gate.max_accuracy_drop:
            ok = False
            reasons.append(
                f"{name}: accuracy {c['accuracy']:.4f} < champion {ch['accuracy']:.4f} "
                f"- {gate.max_accuracy_drop}"
            )
        if c["macro_f1"] < ch["macro_f1"] - gate.max_macro_f1_drop:
            ok = False
            reasons.append(
                f"{name}: macro-F1 {c['macro_f1']:.4f} < champion {ch['macro_f1']:.4f} "
                f"- {gate.max_macro_f1_drop}"
            )
    if ok:
        reasons.append("passes: " + ("no champion yet" if champion is None else "within tolerance"))
    return ok, reasons


def _read(paths: list[str], skip: bool, report: dict, key: str) -> list[Example]:
    if not paths:
        return []
    res = read_many(paths, skip_invalid=skip)
    report["data"][key] = {
        "files": [{"path": p, "sha256": sha256_file(Path(p))} for p in paths],
        "examples": len(res.examples),
        "skipped": len(res.skipped),
        "skipped_reasons": [f"{b.source}: {b.reason}" for b in res.skipped[:50]],
        "labels": label_counts(res.examples),
    }
    return res.examples


def retrain(cfg: RetrainConfig, version: str | None = None, progress: bool = False) -> dict:
    """Run the job; returns the report (also written to <registry>/reports/<version>.json)."""
    from model.export import export_run
    from training.train import fit

    version = version or "v" + datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    reg = Registry(cfg.registry).init()
    report: dict = {
        "version": version,
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "code_version": code_version(),
        "preset": cfg.preset,
        "data": {},
        "promoted": False,
    }
    with reg.lock(blocking=False):
        reg.clean_work()
        # 1. validate every file before any training
        base = _read(cfg.base, cfg.skip_invalid, report, "base")
        new = _read(cfg.new, cfg.skip_invalid, report, "new")
        dev = _read(cfg.dev, cfg.skip_invalid, report, "dev") or None
        evals = {}
        for name, p in cfg.eval.items():
            evals[name] = _read([p], cfg.skip_invalid, report, f"eval:{name}")
        train = base + new
        if not train:
            raise DataError("no training examples left after validation")
        # 2. label drift against the champion's training data
        champion = reg.current()
        counts = label_counts(train)
        report["champion"] = champion
        if champion:
            old = reg.metadata(champion).get("train", {}).get("label_counts")
            if old:
                d = drift(old, counts)
                report["drift"] = {
                    "tvd": d,
                    "champion": label_shares(old),
                    "challenger": label_shares(counts),
                    "threshold": cfg.drift_threshold,
                    "warning": d > cfg.drift_threshold,
                }
                if d > cfg.drift_threshold:
                    log.warning(
                        "label distribution drift %.3f > %.3f against %s",
                        d,
                        cfg.drift_threshold,
                        champion,
                    )
        # 3. train and 4. export, in scratch space
        work = reg.new_work_dir()
        try:
            preset = load_config(Path(cfg.model_config) if cfg.model_config else None, cfg.preset)
            over = {"seed": cfg.seed} | ({"epochs": cfg.epochs} if cfg.epochs else {})
            preset = replace(preset, train=replace(preset.train, **over))
            info = {
                "train": report["data"]["base"]["files"] if cfg.base else [],
                "new": report["data"].get("new", {}).get("files", []),
            }
            fit(
                train,
                dev,
                preset,
                work / "run",
                data_info=info,
                progress=progress,
                preset_name=cfg.preset,
            )
            meta = export_run(work / "run", work / "artifact", name=cfg.preset, version=version)
            meta["parent"] = champion
            meta["registry_report"] = f"reports/{version}.json"
            (work / "artifact" / "metadata.json").write_text(json.dumps(meta, indent=1))
            report["parity"] = meta["parity"]
            # 5. challenger and champion on the same evaluation sets
            ch_metrics = {n: _summary(evaluate(work / "artifact", ex)) for n, ex in evals.items()}
            champ_metrics = (
                {n: _summary(evaluate(reg.path(champion), ex)) for n, ex in evals.items()}
                if champion
                else None
            )
            report["challenger_metrics"] = ch_metrics
            report["champion_metrics"] = champ_metrics
            # 6. gate, 7. register, promote if it passed
            ok, reasons = check_gate(cfg.gate, ch_metrics, champ_metrics)
            report["gate"] = {"passed": ok, "reasons": reasons, **cfg.gate.__dict__}
            meta["eval"] = ch_metrics
            meta["gate"] = report["gate"]
            (work / "artifact" / "metadata.json").write_text(json.dumps(meta, indent=1))
            reg.add(work / "artifact", version)
            if ok:
                reg.promote(version, reason="; ".join(reasons))
                report["promoted"] = True
            report["pruned"] = reg.prune(cfg.keep)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        report["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
        reports = reg.root / "reports"
        reports.mkdir(exist_ok=True)
        (reports / f"{version}.json").write_text(json.dumps(report, indent=1))
        (reports / f"{version}.txt").write_text(summary(report) + "\n")
    return report


def _summary(rep: dict) -> dict:
    return {"accuracy": rep["accuracy"], "macro_f1": rep["macro_f1"], "n": rep["n"]}


def summary(report: dict) -> str:
    lines = [
        f"retrain {report['version']}: "
        + ("PROMOTED" if report["promoted"] else "NOT promoted")
        + f" (champion before: {report.get('champion')})"
    ]
    d = report.get("drift")
    if d:
        lines.append(f"label drift (TVD) {d['tvd']:.3f}" + ("  WARNING" if d["warning"] else ""))
    for name, m in (report.get("challenger_metrics") or {}).items():
        champ = (report.get("champion_metrics") or {}).get(name)
        line = f"  {name}: challenger acc {m['accuracy'] * 100:.2f} F1 {m['macro_f1'] * 100:.2f}"
        if champ:
            line += (
                f" | champion acc {champ['accuracy'] * 100:.2f} F1 {champ['macro_f1'] * 100:.2f}"
            )
        lines.append(line)
    for r in (report.get("gate") or {}).get("reasons", []):
        lines.append(f"  gate: {r}")
    skipped = sum(v.get("skipped", 0) for v in report["data"].values())
    if skipped:
        lines.append(f"  {skipped} invalid records skipped")
    return "\n".join(lines)
