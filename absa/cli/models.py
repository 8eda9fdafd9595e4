"""``absa models``: the model registry (list, show, promote, rollback), torch-free.

The registry must exist (``absa retrain`` creates registries; a mistyped path is an error,
and nothing is created there); promote and rollback verify the target version first and
change nothing if it fails."""

from __future__ import annotations

import argparse
import json
import logging
from typing import TYPE_CHECKING, Any

from absa.cli.common import CLIError, given, say, to_stdout

if TYPE_CHECKING:
    from absa.model.registry import Registry


def _registry(args: argparse.Namespace) -> Registry:
    from absa.model.registry import Registry
    from absa.settings import ModelSettings

    root = args.registry or ModelSettings().registry
    if not root:
        raise CLIError("name the registry with --registry DIR or ABSA_REGISTRY")
    return Registry.open(root)  # a mistyped path is an error, never a new empty registry


def _empty_volume(args: argparse.Namespace) -> bool:
    """Whether the registry named is an empty folder (a fresh volume: the service serves it
    as an empty registry, its fallback model), said so; nothing is made there."""
    from pathlib import Path

    from absa.model.registry import volume_entry
    from absa.settings import ModelSettings

    root = args.registry or ModelSettings().registry
    if not root or not Path(root).is_dir():
        return False
    if any(not volume_entry(p.name) for p in Path(root).iterdir()):
        return False
    say(
        f"absa models: {root} holds no version yet: an empty registry, whose service serves "
        "its fallback model; `absa retrain` adds the first",
        logging.WARNING,  # not an error (exit 0): a collector of ERROR lines fired on it
    )
    return True


def _mend(e: Exception) -> str:
    """The way to mend the registry's pointer after the error ``e`` about it, where that
    does not say it already."""
    return "" if "absa models promote" in str(e) else "; promote a version to mend it"


def cmd_models(args: argparse.Namespace) -> int:
    from absa.errors import RegistryError
    from absa.model.registry import LINK_SAID, POINTER, held

    if args.action == "list" and _empty_volume(args):
        return 0
    reg = _registry(args)
    if args.action == "list":
        try:  # an unreadable pointer: the versions are still listed, to promote one
            current = reg.current()
        except RegistryError as e:
            current = None
            say(f"absa models: warning: {e}{_mend(e)}", logging.WARNING)
        versions = reg.versions()
        try:  # the challenger ABSA_SHADOW_MODEL=held scores (prune spares it)
            challenger = reg.newest_held(versions)
        except RegistryError:  # the pointer, said above
            challenger = None
        if current is not None and current not in versions:  # the service will not start
            say(
                f"absa models: warning: {reg.root / POINTER} names version {current!r}, which "
                f"is not in {reg.versions_dir}; promote a version to mend it",
                logging.WARNING,
            )
        for v in versions:
            mark = "*" if v == current else " "
            try:
                m = reg.metadata(v)
            except RegistryError as e:  # one bad version: the others are still listed
                to_stdout(f"{mark} {v:<22} unreadable: {e}\n")
                continue
            created = str(m.get("created") or "")
            line = f"{mark} {v:<22} {created:<26} parent={m.get('parent')} {_evals(m)}"
            if v == challenger:
                line += "  held: a challenger its job did not promote (promote = false)"
            elif held(m) and v != current and not reg.ever_served(v):
                line += "  held, passed by a newer held or served version"
            try:  # what promote checks: a file missing or changed, a graph that cannot run
                reg.check_servable(v)
            except RegistryError as e:
                line += f"  cannot serve: {str(e).split(': ', 1)[-1]}"
            to_stdout(line + "\n")
        for v in reg.links():  # no version, never pruned or served
            to_stdout(f"  {v:<22} a symbolic link: not a version\n")
            say(f"absa models: warning: {reg.versions_dir / v} is {LINK_SAID}", logging.WARNING)
        for v in reg.incomplete():  # no version, never pruned: the operator's to finish
            to_stdout(f"  {v:<22} incomplete: no metadata.json {CUT_SHORT}\n")
            say(
                f"absa models: warning: {reg.versions_dir / v} has no metadata.json "
                f"{CUT_SHORT}: not a version, and prune leaves it; finish it, or remove it",
                logging.WARNING,
            )
        return 0
    if args.action == "show":
        to_stdout(json.dumps(reg.metadata(args.version), indent=1) + "\n")
        return 0
    # said before the lock, whose file would be the one thing the command made
    if args.action in ("promote", "rehash"):
        reg.path(args.version)
    else:
        try:
            reg.pointer()
        except RegistryError as e:  # torn: no version to go back to is named in it
            raise RegistryError(f"{e}{_mend(e)}") from None
        reg.rollback_target()
    with reg.lock():  # held by a retraining job only while it adds or promotes a version
        if args.action == "rehash":
            n = reg.rehash(args.version)
            to_stdout(f"{args.version}: recorded the sha256 of {n} files\n")
        elif args.action == "promote":
            reg.promote(args.version, reason="manual")
            to_stdout(f"current: {args.version}\n")
        else:
            to_stdout(f"current: {reg.rollback()}\n")
    return 0


#: what a directory in versions/ without metadata.json may be
CUT_SHORT = "(a copy in progress, or one cut short)"

#: each action, what it does, and whether it names a VERSION
ACTIONS = {
    "list": ("the versions, oldest first, the current one marked *", False),
    "show": ("a version's metadata as JSON", True),
    "promote": ("verify a version, then point CURRENT at it (served at the next reload)", True),
    "rollback": ("point CURRENT back at the previous version", False),
    "rehash": (
        "record the sha256 of each file of a version exported by absa 1.2 or older, which "
        "every load refuses without them (its graph must match the sha256 its export "
        "recorded)",
        True,
    ),
}
REGISTRY_HELP = "registry directory (default: $ABSA_REGISTRY)"


def register(sub: Any) -> None:
    m = sub.add_parser("models", help="the model registry: list, show V, promote V, rollback")
    m.add_argument("--registry", type=given, help=REGISTRY_HELP)
    # one parser per action: a VERSION positional of its own where it takes one. One optional
    # VERSION for all made `models promote --registry DIR v2` fail ("unrecognized arguments:
    # v2": argparse filled it, empty, before the option)
    actions = m.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, (what, versioned) in ACTIONS.items():
        a = actions.add_parser(name, help=what, description=what[0].upper() + what[1:] + ".")
        if versioned:
            a.add_argument("version", metavar="VERSION", help="as `absa models list` names it")
        # SUPPRESS: the action's parser leaves --registry as `models --registry DIR` set it
        a.add_argument("--registry", type=given, default=argparse.SUPPRESS, help=REGISTRY_HELP)
        a.set_defaults(func=cmd_models, **({} if versioned else {"version": None}))


def _evals(metadata: dict) -> str:
    """accuracy/macro-F1 per evaluation set, as far as the metadata holds numbers ("?" where
    it does not: a listing never fails on one version's odd record)."""

    def pct(x: object) -> str:
        ok = isinstance(x, int | float) and not isinstance(x, bool)
        return f"{x * 100:.2f}" if ok else "?"  # type: ignore[operator]

    ev = metadata.get("eval")
    if not isinstance(ev, dict):
        return ""
    parts = []
    for k, x in ev.items():
        x = x if isinstance(x, dict) else {}
        parts.append(f"{k}={pct(x.get('accuracy'))}/{pct(x.get('macro_f1'))}")
    return " ".join(parts)
