"""The retraining job's report: <registry>/reports/<version>.json and its text summary,
each written whole; the temporaries a killed job left removed."""

from __future__ import annotations

import contextlib

from absa.model.registry import Registry, atomic_write_json, atomic_write_text, readable


def write_report(reg: Registry, report: dict) -> None:
    """<registry>/reports/<version>.json, and its summary as .txt; each written whole
    (temporary file + rename), the text first: a report's .json means it is complete."""
    reports = reg.root / "reports"
    reports.mkdir(exist_ok=True)
    with contextlib.suppress(PermissionError):  # made under a strict umask: readable by all
        readable(reports, tree=False)
    atomic_write_text(reports / f"{report['version']}.txt", summary(report) + "\n")
    atomic_write_json(reports / f"{report['version']}.json", report)


def clean_reports(reg: Registry) -> None:
    """Remove the temporaries of ``write_report`` a killed job left in reports/ (hidden
    files, never read as reports; only jobs write there: hold ``job_lock``)."""
    reports = reg.root / "reports"
    if reports.is_dir():
        for tmp in reports.glob(".*"):
            if tmp.is_file():
                tmp.unlink(missing_ok=True)


def baseline_word(report: dict) -> str:
    """ "served model", or "config's baseline" (a report's ``baseline_name``)."""
    return str(report.get("baseline_name") or "the served model").removeprefix("the ")


def summary(report: dict) -> str:
    lines = [
        f"retrain {report['version']}: "
        + ("PROMOTED" if report["promoted"] else "HELD" if report.get("held") else "NOT promoted")
        + f" (champion before: {report.get('champion')})"
    ]
    # without a champion the gate compared with the served model (or the config's baseline)
    other = "champion" if report.get("champion") else baseline_word(report)
    base = report.get("baseline_model")
    if base:  # no champion: which model the gate compared with
        what = f"{base.get('name')} {base.get('version')}" if base.get("version") else "a run"
        lines.append(f"  {other}: {what} ({base['path']})")
    if report.get("recovered"):
        lines.append("  (report written by the next run: this job was killed before writing it)")
    if report.get("again"):  # the same job run again after it finished: nothing done
        lines.append(
            f"  (the report of {report.get('finished')}: run again at {report['again']}, "
            "nothing done; the registry may have changed since)"
        )
    # a version this run promoted or reported for a killed job: not only in the JSON
    for r in report.get("repaired", []):
        lines.append(f"  repaired {r['version']}: {r['action']}")
    if report.get("resumed_after_epoch"):
        lines.append(
            f"  resumed a killed job's training after epoch {report['resumed_after_epoch']}"
        )
    d = report.get("drift")
    if d:
        lines.append(f"label drift (TVD) {d['tvd']:.3f}" + ("  WARNING" if d["warning"] else ""))
    for name, m in (report.get("challenger_metrics") or {}).items():
        champ = (report.get("champion_metrics") or {}).get(name)
        line = f"  {name}: challenger acc {m['accuracy'] * 100:.2f} F1 {m['macro_f1'] * 100:.2f}"
        if champ:
            line += f" | {other} acc {champ['accuracy'] * 100:.2f} F1 {champ['macro_f1'] * 100:.2f}"
        lines.append(line)
    for name, o in (report.get("eval_overlap") or {}).items():
        lines.append(
            f"  WARNING eval {name}: {o['sentences']} of its {o['of']} sentences are in the "
            "training or dev data"
        )
    for r in (report.get("gate") or {}).get("reasons", []):
        lines.append(f"  gate: {r}")
    if report.get("not_promoted"):  # passed the gate, and why it does not serve all the same
        lines.append(f"  not promoted: {report['not_promoted']}")
    if report.get("pruned"):
        lines.append(f"  pruned: {', '.join(report['pruned'])}")
    if report.get("prune_error"):
        lines.append(f"  WARNING pruning old versions failed: {report['prune_error']}")
    skipped = sum(v.get("skipped", 0) for v in report["data"].values())
    if skipped:
        lines.append(f"  {skipped} invalid records skipped")
    return "\n".join(lines)
