"""The retraining job's configuration: the TOML file, every key and value checked before any
work (``RetrainConfig.load``), the gate's tolerances (``Gate``), and what a report keeps of
them (``config_record``)."""

from __future__ import annotations

import json
import logging
import math
import os
import tomllib
import typing
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from absa.model.typed import typed_value
from absa.training.presets import load_config
from absa.training.provenance import file_info, refuse_twice

log = logging.getLogger(__name__)

CALIBRATIONS = ("temperature", "top_map")


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
    seed: int = 1  # where the file names none: model_config's (as absa train reads it)
    epochs: int | None = None
    keep: int = 5
    skip_invalid: bool = False
    drift_threshold: float = 0.1  # total variation distance of label shares that warns
    # false: a version that passes its gate is added and held, not promoted: a challenger to
    # score beside the champion on live traffic first (ABSA_SHADOW_MODEL), promoted by hand
    promote: bool = True
    gate: Gate = field(default_factory=Gate)
    # what the gate compares with while the registry has no champion: the model the service
    # serves meanwhile (None: ABSA_MODEL_DIR, else the shipped model)
    baseline: str | None = None
    # "temperature", or "top_map": the top-label map after it (needs >= 500 dev items)
    calibration: str = "temperature"
    # the exported model's name, what answers ("model": "NAME:VERSION") and /v1/model call
    # it (None: the preset's)
    name: str | None = None
    source: Path | None = None  # the TOML file it was read from (load sets it; not a key)

    @classmethod
    def load(cls, path: Path) -> RetrainConfig:
        """The job's TOML file, every key and value checked before any work: ValueError
        naming the file (and the key) for what does not fit."""
        path = Path(path)
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8-sig"))  # a BOM is no error
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"{path}: {e}") from None
        base_dir = path.parent

        def rel(p: str) -> str:  # "~/x" is the user's, not beside the file
            p = os.path.expanduser(p)
            return str((base_dir / p).resolve()) if not Path(p).is_absolute() else p

        tables = {name: raw.pop(name, {}) for name in ("data", "gate", "eval")}
        for name, table in tables.items():
            if not isinstance(table, dict):
                raise ValueError(f"{path}: [{name}] is a {type(table).__name__}, not a table")
        data, eval_ = tables["data"], tables["eval"]
        _known(path, "[data]", data, {"base", "new", "dev"})
        _known(path, "[gate]", tables["gate"], {f.name for f in fields(Gate)})
        top = {f.name for f in fields(cls)} - {"base", "new", "dev", "source"}
        _known(path, "the top level", raw, top)
        files = {k: [rel(f) for f in _paths(data.get(k, []), f"{path}: data.{k}")]
                 for k in ("base", "new", "dev")}  # fmt: skip
        for group in (files["base"] + files["new"], files["dev"]):
            try:  # a file in base and new too: each of its aspects would count twice
                refuse_twice(group)
            except ValueError as e:
                raise ValueError(f"{path}: [data] {e}") from None
        evals = {k: typed_value(str, v, f"{path}: eval.{k}") for k, v in eval_.items()}
        gate_hints = typing.get_type_hints(Gate)
        gate = Gate(**{k: typed_value(gate_hints[k], v, f"{path}: gate.{k}")
                       for k, v in tables["gate"].items()})  # fmt: skip
        hints = typing.get_type_hints(cls)
        values: dict[str, Any]  # each checked against its field's type
        values = {k: typed_value(hints[k], v, f"{path}: {k}") for k, v in raw.items()
                  if k not in ("registry", "gate", "eval")}  # fmt: skip
        registry = typed_value(str, raw.get("registry", "models"), f"{path}: registry")
        if not registry.strip():  # read as this file's own folder, made into a registry
            raise ValueError(f"{path}: registry is empty: name the registry's folder")
        for key in ("model_config", "baseline"):
            if values.get(key):
                values[key] = rel(values[key])
        # the preset and its overrides, read now (not after the registry's repair and the
        # data); where this file names no preset, model_config's own is the job's, as
        # `absa train --config` reads it (the default "fast" silently replaced it)
        model_config = values.get("model_config")
        try:
            preset = load_config(Path(model_config) if model_config else None, values.get("preset"))
        except FileNotFoundError as e:
            raise ValueError(f"{path}: model_config {e.filename}: no such file") from e
        except (OSError, KeyError, ValueError) as e:
            msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
            raise ValueError(f"{path}: {msg}") from e
        if preset.model.is_category:  # its data would be read as aspect terms
            raise ValueError(
                f"{path}: absa retrain trains aspect-term models: {model_config} is a category "
                "model (train one with absa train --task category)"
            )
        values["preset"] = preset.name
        # and its seed: the job's default, 1, replaced model_config's without a word
        values.setdefault("seed", preset.train.seed)
        cfg = cls(
            base=files["base"],
            new=files["new"],
            dev=files["dev"],
            eval={k: rel(v) for k, v in evals.items()},
            registry=Path(rel(registry)),
            gate=gate,
            source=path.resolve(),
            **values,
        )
        if not cfg.base and not cfg.new:
            raise ValueError(f"{path}: [data] names no training files (base, new)")
        if not cfg.eval:
            raise ValueError(f"{path}: [eval] names no evaluation sets")
        if cfg.calibration not in CALIBRATIONS:
            raise ValueError(
                f"{path}: calibration must be one of {', '.join(CALIBRATIONS)}, "
                f"not {cfg.calibration!r}"
            )
        if cfg.name is not None and (not cfg.name.strip() or ":" in cfg.name):
            raise ValueError(  # answers say NAME:VERSION: a colon would make them ambiguous
                f"{path}: name must be a non-empty name without ':', not {cfg.name!r}"
            )
        if cfg.keep < 1:
            raise ValueError(f"{path}: keep must be >= 1 (the versions kept), not {cfg.keep}")
        if cfg.epochs is not None and cfg.epochs < 1:
            raise ValueError(f"{path}: epochs must be >= 1, not {cfg.epochs}")
        if not 0.0 <= cfg.drift_threshold <= 1.0:
            raise ValueError(f"{path}: drift_threshold must be in [0, 1]")
        if not 0 <= cfg.seed < 2**32:
            raise ValueError(f"{path}: seed must be in [0, 2**32), not {cfg.seed}")
        for key, value in cfg.gate.__dict__.items():  # NaN would let every challenger pass
            if not (math.isfinite(value) and 0.0 <= value <= 1.0):
                raise ValueError(
                    f"{path}: gate.{key} must be a share in [0, 1] (0.01 is one point), not {value}"
                )
            if key.endswith("_drop") and value >= 0.5:  # "1" meant as one point?
                log.warning(
                    "%s: gate.%s = %s lets a challenger %g points worse than the champion "
                    "through (0.01 is one point)",
                    path,
                    key,
                    value,
                    value * 100,
                )
        return cfg


def _known(path: Path, where: str, table: dict, known: set[str]) -> None:
    unknown = sorted(set(table) - known)
    if unknown:
        raise ValueError(f"{path}: unknown keys {unknown} in {where}; known: {sorted(known)}")


def config_record(cfg: RetrainConfig) -> dict:
    """What a report keeps of the job's configuration: the file it came from (path and
    sha256) and every value as the job ran it (seed, epochs, calibration, gate, ...)."""
    values = json.loads(json.dumps(asdict(cfg), default=str))
    values.pop("source", None)
    return {"file": file_info([cfg.source])[0] if cfg.source else None, "values": values}


def _paths(value: object, where: str) -> list[str]:
    """A [data] list of paths, each checked: the message names the element that is not a
    string (``data.base[1]``), where it showed the whole list."""
    items = typed_value(tuple[object, ...], value, where)
    return [typed_value(str, v, f"{where}[{i}]") for i, v in enumerate(items)]
