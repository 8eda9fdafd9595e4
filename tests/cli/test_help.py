"""`absa --version` and `--help` (issue #13, item 16): every option says what it does and
its default, a flag that sets a service setting names its ABSA_* variable, and no help
text carries reStructuredText markup."""

from __future__ import annotations

import argparse
import re

import pytest

from absa import __version__
from absa.cli import build_parser, main
from absa.settings import TRAINING_ONLY, Settings

RST = re.compile(r"``|:class:|:func:|:meth:|\.\. ")


def subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (act,) = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(act.choices)


def options(p: argparse.ArgumentParser) -> list[argparse.Action]:
    return [
        a
        for a in p._actions
        if a.option_strings and not isinstance(a, argparse._HelpAction | argparse._VersionAction)
    ]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ex:
        main(["--version"])
    assert ex.value.code == 0
    assert capsys.readouterr().out.strip() == f"absa {__version__}"


def test_every_option_has_help_with_its_default() -> None:
    parser = build_parser()
    missing = []
    for name, sp in {"": parser, **subparsers(parser)}.items():
        for a in options(sp):
            flag = f"absa {name} {a.option_strings[-1]}".replace("  ", " ")
            if not a.help or a.help == argparse.SUPPRESS:
                missing.append(f"{flag}: no help")
            elif not a.required and "default" not in a.help:
                missing.append(f"{flag}: no default in {a.help!r}")
    assert not missing, "\n".join(missing)


def test_flags_that_set_a_setting_name_their_variable_and_its_default() -> None:
    parser = build_parser()
    fields = set(Settings.model_fields) | {"model"}
    checked = 0
    for name in ("serve", "predict"):
        for a in options(subparsers(parser)[name]):
            if a.dest not in fields:
                continue
            field = "model_dir" if a.dest == "model" else a.dest
            env = f"ABSA_{field.upper()}"
            if name == "predict" and a.dest == "model":
                assert "ABSA_REGISTRY" in a.help and "ABSA_MODEL_DIR" in a.help, a.help
                continue
            assert env in a.help, f"absa {name} {a.option_strings[0]}: {a.help!r} lacks {env}"
            default = Settings.model_fields[field].default
            if default is not None:
                assert f"default: {default}" in a.help, a.help
            checked += 1
    assert checked >= 10  # serve: model, registry, host, port, workers, device, ...


def test_serve_has_registry() -> None:
    sp = subparsers(build_parser())["serve"]
    assert "--registry" in {o for a in options(sp) for o in a.option_strings}


def test_no_restructuredtext_in_help() -> None:
    parser = build_parser()
    texts = {"absa": parser.format_help()}
    texts.update({f"absa {n}": sp.format_help() for n, sp in subparsers(parser).items()})
    bad = {name: RST.findall(text) for name, text in texts.items() if RST.search(text)}
    assert not bad, bad


def test_every_command_help_opens_with_what_it_does() -> None:
    """`absa COMMAND --help` has a description (its line in `absa --help` where the command
    gives none of its own), and `absa --help` names every command, with no dangling comma."""
    parser = build_parser()
    commands = subparsers(parser)
    for name, sp in commands.items():
        assert sp.description and sp.description.strip(), f"absa {name} --help: no description"
        assert sp.description.strip().endswith("."), (name, sp.description)
    top = " ".join(parser.format_help().split())
    assert "models, vectors, states." in top
    assert ", (" not in top and not re.search(r",\s*$", parser.description or "")
    listed = re.search(r"command line: ([^.]*)\.", top)
    assert listed is not None
    assert set(listed.group(1).split(", ")) == set(commands)


def test_no_default_is_shown_as_a_python_value() -> None:
    """`absa predict --help` said "(default: None; env ABSA_EXTRACTOR)": Python's None, where
    every other flag says what happens without it."""
    parser = build_parser()
    texts = {"absa": parser.format_help()}
    texts.update({f"absa {n}": sp.format_help() for n, sp in subparsers(parser).items()})
    bad = {
        name: re.findall(r"default: (?:None|True|False)\b", " ".join(text.split()))
        for name, text in texts.items()
    }
    assert not any(bad.values()), bad


def test_an_option_of_several_values_given_twice_keeps_both() -> None:
    """`--exclude test1 --exclude test2` kept test2 alone (argparse's store): the first
    test set's sentences were trained on without a word. Every option that takes several
    values extends its list."""
    parser = build_parser()
    stores = [
        f"absa {name} {a.option_strings[-1]}"
        for name, sp in subparsers(parser).items()
        for a in options(sp)
        if a.nargs in ("+", "*") and not isinstance(a, argparse._ExtendAction)
    ]
    assert not stores, stores
    args = parser.parse_args(
        ["train", "--train", "a", "--train", "b", "--exclude", "t1", "--exclude", "t2", "t3",
         "--out", "r"]
    )  # fmt: skip
    assert (args.train, args.exclude) == (["a", "b"], ["t1", "t2", "t3"])


def test_a_mistyped_option_is_told_with_its_commands_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`absa serve --prot 8001` printed absa's own usage ("absa [-h] [--version] [-v]
    COMMAND ..."), not serve's; and an abbreviation (`--epoch 1`, `--thread 1`) was taken
    silently for the option it begins, where a typo of another option would be too."""
    with pytest.raises(SystemExit) as ex:
        main(["serve", "--prot", "8001"])
    assert ex.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: absa serve ") and err.endswith(
        "absa serve: error: unrecognized arguments: --prot 8001\n"
    ), err
    with pytest.raises(SystemExit):
        build_parser().parse_args(["train", "--train", "a", "--out", "r", "--epoch", "1"])
    assert "unrecognized arguments: --epoch 1" in capsys.readouterr().err


def test_serve_help_names_the_variables_without_a_flag() -> None:
    """`absa serve --help` sent users to a source file (absa/settings.py) for the variables
    it has no flag for: it names each of them, and README.md's table for what they do."""
    serve = subparsers(build_parser())["serve"]
    text = serve.format_help()
    assert "settings.py" not in text
    flat = " ".join(text.split())
    for name in ("ABSA_MAX_TEXT_CHARS", "ABSA_MAX_ITEMS", "ABSA_API_KEY", "ABSA_SHED_DELAY_S"):
        assert name in flat, name
    assert "README.md" in flat
    flagged = " ".join(a.help or "" for a in options(serve))
    for name in Settings.model_fields:
        if f"ABSA_{name.upper()})" not in flagged and not name.startswith("prometheus"):
            if name in TRAINING_ONLY:  # read by training, not by the server: not listed
                assert f"ABSA_{name.upper()}" not in flat, name
            else:
                assert f"ABSA_{name.upper()}" in flat, name
    assert {"teacher_cache", "code_version"} <= TRAINING_ONLY
