"""The batch retraining job: validate -> drift check -> train -> export -> evaluate -> gate.

    absa retrain --config retrain.toml

``retrain`` runs the steps in order: ``repair`` (finish what a killed run left),
``read_data`` (every file validated before any training, and every label of the model
present in the training data), ``check_drift``, ``train_challenger``, ``export_challenger``,
``evaluate_on`` (challenger and champion), ``apply_gate``, ``register`` (add, promote if it
passed) and ``write_report``.

Before the registry has a champion, the gate compares the challenger with the model the
service serves meanwhile (``baseline``: ``ABSA_MODEL_DIR``, else the shipped model), so a
first model worse than what is served is not promoted.

A job killed after adding its version, or after promoting it, leaves that version without
its report (and perhaps a ``.CURRENT.*`` temporary file); the next run of the job removes
the temporary file, promotes a version that passed its gate if its champion is still the
current one (the killed job's last step), and writes the missing report (``recovered``).

A job killed (or interrupted) while training, exporting or evaluating leaves its
checkpoint in the registry's ``.work/resumable`` (after training: the last epoch's but one,
kept with the finished run); the next job goes on from it when its configuration and data
are the same (the report says ``resumed_after_epoch``), with the numbers of a job never
killed.

The challenger is trained and exported (with the parity check) in the registry's scratch
space, evaluated beside the current champion on the same fixed evaluation sets, added to
the registry as a new immutable version, and promoted only if it passes the gate. Nothing
the service reads changes until that last atomic step; a failed or killed job leaves the
champion and the registry as they were.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import stat
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from absa.errors import no_room, transient
from absa.model.artifact import amend_metadata
from absa.model.config import ModelConfig
from absa.model.registry import Registry, RegistryError
from absa.model.registry import held as is_held
from absa.training.evaluate import evaluate, model_identity
from absa.training.overlap import sentence_overlap, sentences_of
from absa.training.presets import Preset, load_config
from absa.training.provenance import code_version, file_info
from absa.training.readers import label_counts, missing_labels, read_many
from absa.training.records import DataError, Example, Invalid, term_examples
from absa.training.retrain_config import RetrainConfig, config_record
from absa.training.retrain_gate import apply_gate, check_drift
from absa.training.retrain_report import clean_reports, write_report

log = logging.getLogger(__name__)


class JobStopped(BaseException):
    """The challenger's training stopped as asked (``checkpoint.STOP``: SIGTERM or SIGHUP
    under ``absa retrain``) after a batch, its checkpoint kept in the registry's resumable
    dir: the same job goes on from it. ``args[0]``: the whole epochs done. Not an
    ``Exception``: a failure drops the checkpoint, a stop keeps it, as a kill does."""


def stop_if_asked(run_dir: Path) -> None:
    """JobStopped where a stop was asked (``checkpoint.STOP``) after the challenger's last
    batch, as it is exported or measured: no checkpoint is written then, and the job would
    go on to add and promote a version while its pod goes away. The checkpoint kept with
    the finished run is where the same command goes on from (its last epoch again)."""
    from absa.training import checkpoint
    from absa.training.rundir import HISTORY

    if checkpoint.STOP.is_set():
        raise JobStopped(len(json.loads((run_dir / HISTORY).read_text(encoding="utf-8"))))


@dataclass
class JobData:
    """The job's validated examples."""

    train: list[Example]  # base + new
    dev: list[Example] | None  # None: fit holds out part of train
    evals: dict[str, list[Example]]  # the fixed evaluation sets, by name


def retrain(cfg: RetrainConfig, version: str | None = None, progress: bool = False) -> dict:
    """Run the job; returns the report (also written to <registry>/reports/<version>.json)."""
    version = version or "v" + datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    report: dict = {
        "version": version,
        "started": _now(),
        "code_version": code_version(),
        "preset": cfg.preset,
        "config": config_record(cfg),
        "data": {},
        "promoted": False,
    }
    # a registry is made for a job whose data reads: a typo'd data path made one (versions/,
    # .work, locks) that `absa models` then took for a registry; an existing one is repaired
    # first, whatever this job's data
    early = None if Registry.looks_like(cfg.registry) else read_data(cfg, report["data"])
    reg = Registry(cfg.registry).init()
    with reg.job_lock():  # one job at a time; each change below takes reg.lock() briefly
        with reg.lock():
            reg.clean_work()  # scratch space and pointer temporaries of killed jobs
            clean_reports(reg)  # and their reports' temporaries
            repaired = repair(reg)  # first: the same command again finishes its own version
            if any(r["version"] == version for r in repaired):  # its goal reached: its report
                log.warning("%s, left by a killed run of this job, is finished now", version)
                recovered = json.loads((reg.root / "reports" / f"{version}.json").read_text())
                return {**recovered, "repaired": repaired}
            earlier, taken = None, RegistryError(f"version {version!r} exists already")
            try:
                reg.check_new(version)  # a bad or taken name: refused now, not after training
            except RegistryError as e:
                earlier = _finished(reg, version)  # the same job again, whatever it repaired
                if earlier is None:
                    done = "; ".join(f"{r['version']}: {r['action']}" for r in repaired)
                    if done:
                        raise RegistryError(f"{e} (this job finished it first: {done})") from None
                    raise
                taken = e
        if repaired:
            report["repaired"] = repaired
        data = early or read_data(cfg, report["data"])  # every file, before any training
        if earlier is not None:  # the same job again (a retried pod): its goal reached
            again = _again(cfg, version, report, earlier, taken)
            return {**again, "repaired": repaired} if repaired else again
        overlap = eval_overlap(data)
        if overlap:
            report["eval_overlap"] = overlap
        model = _model_config(cfg)
        if cfg.model_config:  # its values are in the run's train_config; its bytes here
            report["config"]["model_config"] = file_info([cfg.model_config])[0]
        labels = tuple(model.labels)
        check_labels(data.train, labels)
        champion = report["champion"] = reg.current()
        compare_with = _verified_champion(reg, champion) if champion else baseline_dir(cfg)
        task = "category" if model.is_category else "terms"
        check_comparable(compare_with, labels, task, "the champion" if champion else "baseline")
        gated_against = model_identity(compare_with)
        if not champion:
            report["baseline"] = str(compare_with)
            report["baseline_model"] = gated_against
            report["baseline_name"] = baseline_name(cfg)
        drift_report = check_drift(reg, champion, data.train, cfg.drift_threshold)
        if drift_report:
            report["drift"] = drift_report
        work = reg.new_work_dir()  # scratch space: nothing the service reads
        try:
            run_dir, resumed = train_challenger(cfg, data, report["data"], reg, progress)
            if resumed:
                report["resumed_after_epoch"] = resumed
            report["training"] = training_record(run_dir)
            stop_if_asked(run_dir)  # SIGTERM after the last batch: no checkpoint came
            artifact_dir = work / "artifact"
            report["parity"] = export_challenger(
                run_dir, artifact_dir, cfg.name or cfg.preset, version, cfg.calibration == "top_map"
            )
            stop_if_asked(run_dir)
            report["challenger_metrics"] = evaluate_on(artifact_dir, data.evals)
            report["champion_metrics"] = evaluate_on(compare_with, data.evals)
            stop_if_asked(run_dir)  # the last step before a version is added
            report["gate"] = apply_gate(
                cfg.gate,
                report["challenger_metrics"],
                report["champion_metrics"],
                "champion" if champion else f"{baseline_name(cfg)} (no champion yet)",
            )
            with reg.lock():
                report["promoted"] = register(
                    reg, artifact_dir, version, champion, report, gated_against, cfg.promote
                )
                try:  # the version is in (and maybe served): a failed clean-up is not the job's
                    report["pruned"] = reg.prune(cfg.keep)
                except (OSError, RegistryError) as e:
                    log.warning("pruning old versions failed (the job's result stands): %s", e)
                    report["prune_error"] = str(e)
        except Exception as e:  # failed, not killed or interrupted: nothing for the next job,
            known = _is_dir(reg.versions_dir / version)
            added = known is not False  # unknown (the volume fails this look too): maybe
            # added, and a retry must not add it a second time
            if added or not (transient(e) or no_room(e)):  # but the retry of an I/O error
                # (exit 75), or the job run again once there is room, goes on from it
                shutil.rmtree(reg.resumable_dir, ignore_errors=True)
            if added:  # whatever the error (a full disk too): say what the next job does
                # from None: the training is done and in the registry, so no exit 75 (a retry
                # would repair it, then train and add another version on the same data)
                raise RegistryError(
                    f"{version} {'was' if known else 'may have been'} added, not promoted "
                    f"({e}): the next job promotes it if it passed its gate and its champion "
                    "still serves, and writes its report"
                ) from None
            raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(reg.resumable_dir, ignore_errors=True)
        report["finished"] = _now()
        try:
            write_report(reg, report)
        except OSError as e:  # the version is in (and maybe serving): say so, not just "failed"
            done = "was promoted and serves" if report["promoted"] else "was added, not promoted"
            # from None: the job's work is done, so no exit 75 (a retry would train and add
            # another version); the next scheduled job writes the report
            raise RegistryError(
                f"{version} {done}; its report could not be written ({e}): the next job "
                "writes it (marked recovered)"
            ) from None
    return report


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _finished(reg: Registry, version: str) -> dict | None:
    """The report of ``version`` where a job finished it (its version in the registry, its
    report written whole), else None."""
    path = reg.root / "reports" / f"{version}.json"
    if not (reg.versions_dir / version).is_dir() or not path.is_file():
        return None
    try:
        earlier = json.loads(path.read_text(encoding="utf-8"))
        added = reg.metadata(version).get("registry_report") == f"reports/{version}.json"
    except (OSError, ValueError, RegistryError):
        return None
    ours = added and isinstance(earlier, dict) and earlier.get("version") == version
    return earlier if ours else None  # a version put there by hand is no job's


def _again(
    cfg: RetrainConfig, version: str, report: dict, earlier: dict, taken: RegistryError
) -> dict:
    """The same command again after its job finished (a Job's pod retried after a success it
    never saw): that job's report, nothing done, where its config and every data file are
    the same bytes; otherwise the name is taken (``taken``, exit 2)."""
    if earlier.get("recovered"):  # written by a later job's repair: no config, no data
        raise RegistryError(
            f"{taken}: its report was written by a later job's repair (its job was killed), "
            "which records neither config nor data to compare; give this job another --version"
        )
    config = _comparable(config_record(cfg))
    if cfg.model_config:
        config["model_config"] = file_info([cfg.model_config])[0]
    then = _comparable(earlier.get("config") or {})
    same = {k: then.get(k) for k in config} == config and earlier.get("data") == report["data"]
    if not same:
        raise RegistryError(
            f"{taken}: its report ({earlier.get('finished')}) records another config or other "
            "data; give this job another --version"
        )
    log.warning(
        "%s: this job finished it already (its report of %s): nothing to do; its report "
        "and exit status again",
        version,
        earlier.get("finished"),
    )
    return {**earlier, "again": _now()}


def _comparable(config: dict) -> dict:
    """A report's config record less what does not change the job's work where the data
    are the same bytes (``skip_invalid``: with nothing invalid, the same examples)."""
    values = {k: v for k, v in (config.get("values") or {}).items() if k != "skip_invalid"}
    return {**config, "values": values}


def read_data(cfg: RetrainConfig, into: dict) -> JobData:
    """Read and validate every data file; what each held goes into the report (``into``)."""
    base = _read(cfg.base, cfg.skip_invalid, into, "base")
    new = _read(cfg.new, cfg.skip_invalid, into, "new")
    dev = _read(cfg.dev, cfg.skip_invalid, into, "dev") or None
    evals = {
        name: _read([p], cfg.skip_invalid, into, f"eval:{name}") for name, p in cfg.eval.items()
    }
    return JobData(base + new, dev, evals)


def eval_overlap(data: JobData) -> dict[str, dict[str, int]]:
    """Per eval set whose sentences the training or dev data also hold (compared as
    ``absa train --exclude`` compares them): how many, of how many. Logged as a warning: the
    gate then compares challenger and champion on what the challenger learnt."""
    seen = sentences_of([*data.train, *(data.dev or [])])
    out = {}
    for name, examples in data.evals.items():
        overlap = sentence_overlap(examples, seen)
        if overlap["sentences"]:
            out[name] = overlap
            log.warning(
                "eval %s: %d of its %d sentences are in the training or dev data: the gate "
                "compares on sentences the challenger learnt",
                name,
                overlap["sentences"],
                overlap["of"],
            )
    return out


def _model_config(cfg: RetrainConfig) -> ModelConfig:
    return load_config(Path(cfg.model_config) if cfg.model_config else None, cfg.preset).model


def check_labels(train: list[Example], labels: tuple[str, ...]) -> None:
    """Refuse training data that lacks one of the model's labels (DataError): a model
    trained on it could never predict that label."""
    missing, counts = missing_labels(train, labels)
    if missing:
        raise DataError(
            f"the training data has no {', '.join(repr(m) for m in missing)} examples "
            f"(labels found: {counts}); every label of the model ({', '.join(labels)}) needs some"
        )


def baseline_name(cfg: RetrainConfig) -> str:
    """What the gate and the summary call the model compared with while the registry has no
    champion: the served model, or the config's ``baseline``, which need not be it."""
    return "the config's baseline" if cfg.baseline else "the served model"


def baseline_dir(cfg: RetrainConfig) -> Path:
    """What the service serves while the registry has no champion."""
    if cfg.baseline:
        return Path(cfg.baseline)
    from absa.model.runtime import DEFAULT_MODEL_DIR
    from absa.settings import ModelSettings

    return ModelSettings().model_dir or DEFAULT_MODEL_DIR


def check_comparable(model_dir: Path, labels: tuple[str, ...], task: str, what: str) -> None:
    """Before any training: the model the challenger will be gated against can be read,
    does the same task and classifies the same labels (ValueError naming it and the config
    key), so a wrong ``baseline`` fails now, not after hours of training."""
    from absa.errors import ArtifactError
    from absa.training.evaluate import model_kind, model_task

    key = " (the config's `baseline`, else ABSA_MODEL_DIR)" if what == "baseline" else ""
    try:
        theirs_task = model_task(model_dir)
        if model_kind(model_dir) == "artifact":
            from absa.model.artifact import load

            theirs = list(load(model_dir).metadata["labels"])
        else:
            from absa.training import rundir

            cfg = json.loads((Path(model_dir) / rundir.MODEL_CONFIG).read_text(encoding="utf-8"))
            theirs = list(cfg["labels"])
    except (OSError, ValueError, KeyError, ArtifactError) as e:
        raise ValueError(f"{what} {model_dir}{key} cannot be compared with: {e}") from None
    if theirs_task != task:
        raise ValueError(
            f"{what} {model_dir}{key} is a {theirs_task} model, the challenger a {task} model: "
            "the gate compares models of the same task"
        )
    if sorted(theirs) != sorted(labels):
        raise ValueError(
            f"{what} {model_dir} classifies {theirs}, the challenger {list(labels)}: the gate "
            "compares models of the same labels"
        )


def _verified_champion(reg: Registry, champion: str) -> Path:
    """The champion's directory, verified; RegistryError saying what to do where its files
    changed since it was added (the job has nothing to gate against, and its workers,
    which hold it in memory, would not start again)."""
    try:
        return reg.verify(champion)
    except RegistryError as e:
        raise RegistryError(
            f"the champion (the version CURRENT names) cannot be gated against: {e}; restore "
            "its files, or promote a version that verifies (absa models list marks those "
            "that do not), then run the job again"
        ) from None


def repair(reg: Registry) -> list[dict]:
    """Finish what a killed job left (call with the lock held): a version this job added
    but never reported on. If it passed its gate and its champion (parent) is still the
    current one, the killed job died before or just after promoting it: promote it (if not
    yet). Then write its report from its metadata, marked ``recovered``. Returns what was
    done, one entry per version."""
    done = []
    reports = reg.root / "reports"
    for version in reg.versions():
        try:
            meta = reg.metadata(version)
        except RegistryError as e:  # never promoted as it is; listed and left to an operator
            log.warning("repair: version %s cannot be read, left as it is: %s", version, e)
            done.append({"version": version, "action": f"left: unreadable ({e})"})
            continue
        if meta.get("registry_report") != f"reports/{version}.json":
            continue  # not added by this job
        if (reports / f"{version}.json").is_file():
            continue
        gate = meta.get("gate") or {}
        lost = "recorded by the next run: killed after promoting it, before its history line"
        if reg.record_unrecorded_promotion(version, lost):
            log.warning("repair: %s is current but history.jsonl lacked it: recorded", version)
        ptr = reg.pointer()
        # a version rolled back by hand is in neither the pointer nor its previous list:
        # only the history says it served, and it must not be promoted again
        promoted = (
            version == ptr.get("version")
            or version in ptr.get("previous", [])
            or reg.ever_served(version)
        )
        action = "reported"
        held = is_held(meta)  # a challenger: never promoted here
        parent = meta.get("parent") == ptr.get("version")
        if not promoted and gate.get("passed") and parent and not held:
            why = "finished by the next run: " + "; ".join(gate["reasons"])
            try:
                reg.promote(version, reason=why)
                promoted, action = True, "promoted and reported"
            except RegistryError as e:  # fails verification now: reported, not served
                log.warning("repair: %s not promoted: %s", version, e)
                action = f"reported, not promoted: {e}"
        report = {
            "version": version,
            "recovered": True,
            "started": meta.get("created"),
            "finished": _now(),
            "code_version": meta.get("code_version"),
            "preset": meta.get("preset"),
            "data": {},
            # the killed job's own record of its data went with it: the version's metadata
            # still names its seed and training files with their sha256
            "trained_on": meta.get("train"),
            "champion": meta.get("parent"),
            "challenger_metrics": meta.get("eval"),
            "champion_metrics": None,
            "parity": meta.get("parity"),
            "gate": gate,
            "promoted": promoted,
            **({"held": True} if held else {}),
        }
        write_report(reg, report)
        log.warning("repaired %s left by a killed job: %s", version, action)
        done.append({"version": version, "action": action})
    return done


def _read(paths: list[str], skip: bool, into: dict, key: str) -> list[Example]:
    """The files' examples, each file read and checked on its own: one that ``skip_invalid``
    leaves empty (a file of another format) is a DataError, never passed over: an empty eval
    set lets any challenger through the gate, an empty dev file silently became a held-out
    part, an empty base file left the new data to train on alone."""
    examples: list[Example] = []
    skipped: list[Invalid] = []
    for path in paths:
        res = read_many([path], skip_invalid=skip)
        if not res.examples:
            raise DataError(
                f"{path}: no examples left after validation ({key.replace(':', '.')}; "
                f"{len(res.skipped)} skipped as invalid)"
            )
        examples += term_examples(res.examples)
        skipped += res.skipped
    if paths:
        into[key] = {
            "files": file_info(paths),
            "examples": len(examples),
            "skipped": len(skipped),
            "skipped_reasons": [f"{b.source}: {b.reason}" for b in skipped[:50]],
            "labels": label_counts(examples),
        }
    return examples


def training_record(run_dir: Path) -> dict:
    """What the challenger's run recorded of how it trained (libraries and CPU, each
    session's threads and device, its training config), for the report: the
    version's own metadata, which also has them, goes when ``keep`` prunes it."""
    from absa.training.rundir import TRAIN_CONFIG, read_info

    info = read_info(run_dir)
    config = json.loads((run_dir / TRAIN_CONFIG).read_text(encoding="utf-8"))
    return {"environment": info.get("environment"), "sessions": info.get("sessions"),
            "train_config": config}  # fmt: skip


def job_preset(cfg: RetrainConfig) -> Preset:
    """The preset the job trains: ``model_config`` read as `absa train --config` reads it,
    with the job's seed (model_config's where the job's file names none) and epochs."""
    preset = load_config(Path(cfg.model_config) if cfg.model_config else None, cfg.preset)
    epochs = cfg.epochs or preset.train.epochs
    return replace(preset, train=replace(preset.train, seed=cfg.seed, epochs=epochs))


def train_challenger(
    cfg: RetrainConfig, data: JobData, data_report: dict, reg: Registry, progress: bool
) -> tuple[Path, int]:
    """Train the configured preset (with the job's seed and epochs) in the registry's
    ``resumable_dir``: the run, and the epoch a killed job's checkpoint had reached (0:
    none). A job killed while training leaves its checkpoint there, and the next job goes
    on from it when its configuration and data are the same (training/checkpoint.py);
    otherwise that checkpoint is dropped and training starts again."""
    from absa.training.checkpoint import CheckpointError
    from absa.training.train import fit

    preset = job_preset(cfg)
    if cfg.calibration == "top_map":
        from absa.model.calibration import TOP_MAP_MIN_DEV

        n_dev = len(data.dev) if data.dev else round(len(data.train) * preset.train.dev_fraction)
        if n_dev < TOP_MAP_MIN_DEV:
            raise DataError(
                f'calibration = "top_map" needs at least {TOP_MAP_MIN_DEV} dev items; this '
                f"job's dev split would hold about {n_dev} (give [data] dev, or use "
                '"temperature")'
            )
    info = {  # every file the run reads, as ``absa train`` records them (the card lists them)
        "train": data_report["base"]["files"] if cfg.base else [],
        "new": data_report.get("new", {}).get("files", []),
        "dev": data_report.get("dev", {}).get("files", []),
        # the network's file, as `absa train --config` records its config
        "config": file_info([cfg.model_config]) if cfg.model_config else [],
    }
    run_dir = reg.resumable_dir / "run"

    def train() -> int:
        # the checkpoint kept with the finished run: a job killed while it exports or
        # evaluates trains the last epoch again, not all of them (the job drops it at its end)
        res = fit(
            data.train,
            data.dev,
            preset,
            run_dir,
            info,
            progress,
            cfg.preset,
            resume=True,
            keep_checkpoint=True,
            reproduce=_command(cfg),
            resume_with="the same command (absa retrain, no flag)",
        )
        if res.stopped:  # checkpoint.STOP: SIGTERM under `absa retrain`
            raise JobStopped(len(res.history))
        return res.resumed_after

    try:
        return run_dir, train()
    except CheckpointError as e:  # its advice (--out, --resume) is absa train's: said here
        why = "of another configuration or data set" if "another" in str(e) else "unreadable"
        log.warning(
            "the checkpoint a killed job left in %s is %s: dropped, training from epoch 1 (%s)",
            reg.resumable_dir,
            why,
            type(e).__name__,
        )
        shutil.rmtree(reg.resumable_dir, ignore_errors=True)
        return run_dir, train()


def _command(cfg: RetrainConfig) -> str | None:
    """The command that trains the challenger again: this job's (its config file names the
    data, whose hashes the version records; the job also gates and registers it)."""
    import shlex

    from absa.training.provenance import portable

    if cfg.source is None:  # a config made in code, not read from a file
        return None
    flags = ["--skip-invalid"] if cfg.skip_invalid else []
    return shlex.join(["absa", "retrain", "--config", portable(cfg.source), *flags])


def export_challenger(
    run_dir: Path, artifact_dir: Path, name: str, version: str, top_map: bool = False
) -> dict:
    """Export with the parity check (ParityError: nothing exported), with the top-label map
    if asked; returns the parity record."""
    from absa.training.exporting import export_run

    meta = export_run(run_dir, artifact_dir, name=name, version=version, top_map=top_map)
    return meta["parity"]


def evaluate_on(model_dir: Path, evals: dict[str, list[Example]]) -> dict[str, dict]:
    """Accuracy, macro-F1 and n of a model on each evaluation set."""
    return {name: _summary(evaluate(model_dir, examples)) for name, examples in evals.items()}


def register(
    reg: Registry,
    artifact_dir: Path,
    version: str,
    champion: str | None,
    report: dict,
    gated_against: dict,
    promote: bool = True,
) -> bool:
    """Record lineage, evaluation and gate (and the model it compared with, ``model_identity``)
    in the artifact, add it to the registry as ``version``, and promote it if it passed the
    gate; whether it was promoted. ``promote`` False (the config's): one that passed is held,
    its report says so (``held``), and the metadata too: a killed job's repair leaves it."""
    amend_metadata(
        artifact_dir,
        parent=champion,
        gated_against=gated_against,
        registry_report=f"reports/{version}.json",
        eval=report["challenger_metrics"],
        gate=report["gate"],
        **({} if promote or not report["gate"]["passed"] else {"held": True}),
    )
    reg.add(artifact_dir, version)
    if not report["gate"]["passed"]:
        return False
    if not promote:
        report["held"] = True
        report["not_promoted"] = (
            f"promote = false in the config: it waits as a challenger; score it beside the "
            f"champion on live traffic (ABSA_SHADOW_MODEL={reg.path(version)}, or `held`: "
            f"the registry's newest held version, followed), then "
            f"`absa models promote {version}` if it should serve"
        )
        log.info("%s: passed its gate, held: %s", version, report["not_promoted"])
        return False
    try:
        now = reg.current()
    except RegistryError as e:  # an operator is mending the pointer: theirs to decide
        now = f"an unreadable pointer ({e})"
    if now != champion:  # promoted or rolled back by hand while the job ran
        report["not_promoted"] = (
            f"the current version changed while the job ran ({champion} -> {now}); the gate "
            f"compared with {champion}: promote {version} by hand if it should serve"
        )
        log.warning("%s: not promoted: %s", version, report["not_promoted"])
        return False
    reg.promote(version, reason="; ".join(report["gate"]["reasons"]))
    return True


def _summary(rep: dict) -> dict:
    return {"accuracy": rep["accuracy"], "macro_f1": rep["macro_f1"], "n": rep["n"]}


def _is_dir(path: Path) -> bool | None:
    """Whether ``path`` is a directory; None where the file system cannot say (a stale
    handle, an I/O error), which ``Path.is_dir`` answers False on some Python versions."""
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError:
        return None
