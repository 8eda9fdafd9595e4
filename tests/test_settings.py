"""Settings: the environment the service reads, and only its own variables."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from absa.settings import Settings


def test_only_prefixed_variables_choose_the_extractor(monkeypatch: pytest.MonkeyPatch) -> None:
    """The alias list held the bare field name, which pydantic-settings matches as a variable
    name too: any EXTRACTOR in a container's environment chose the service's extractor."""
    for name in ("ABSA_EXTRACTOR", "ABSA_EXTRACTOR_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("EXTRACTOR", "/some/where")
    assert Settings().extractor is None
    assert Settings(extractor="shipped").extractor == "shipped"  # by name, in code
    monkeypatch.setenv("ABSA_EXTRACTOR_DIR", "/x")
    assert str(Settings().extractor) == "/x"
    monkeypatch.setenv("ABSA_EXTRACTOR", "shipped")
    assert Settings().extractor == "shipped"


def test_the_log_level_is_a_level(monkeypatch: pytest.MonkeyPatch) -> None:
    """ABSA_LOG_LEVEL=verbose ended `absa serve` with uvicorn's bare KeyError ('verbose')."""
    monkeypatch.setenv("ABSA_LOG_LEVEL", "WARNING")
    assert Settings().log_level == "warning"
    monkeypatch.setenv("ABSA_LOG_LEVEL", "verbose")
    with pytest.raises(ValidationError, match="log_level"):
        Settings()


def test_a_bad_setting_is_one_line_naming_its_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """pydantic's five lines about 'Settings' named neither the variable nor the flag: a
    value given as a flag is named as the flag, one from the environment as its variable."""
    from absa.cli import main

    assert main(["serve", "--workers", "0"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "absa serve: error: --workers: input should be greater than or equal to 1, not 0\n"
    )
    monkeypatch.setenv("ABSA_DEVICE", "gpu")
    assert main(["predict", "--text", "the food", "--aspect", "food"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("absa predict: error: ABSA_DEVICE: input should be 'auto'"), err
    assert err.count("\n") == 1 and err.rstrip().endswith("not 'gpu'")


def test_paths_under_the_home_directory_are_expanded(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An environment file or a unit has no shell to expand ``~``: every path setting does
    it (``~user`` too); 'shipped' and 'off' stay the words they are."""
    monkeypatch.setenv("HOME", str(tmp_path))
    for name, value in (
        ("ABSA_MODEL_DIR", "~/m"),
        ("ABSA_REGISTRY", "~/reg"),
        ("ABSA_EXTRACTOR", "~/ext"),
        ("ABSA_CATEGORY_MODEL", "~/cat"),
        ("ABSA_RUN_DIR", "~/runs"),
        ("ABSA_TEACHER_CACHE", "~/cache"),
    ):
        monkeypatch.setenv(name, value)
    s = Settings()
    assert (s.model_dir, s.registry, s.extractor) == (
        tmp_path / "m",
        tmp_path / "reg",
        tmp_path / "ext",
    )
    assert (s.category_model, s.run_dir) == (tmp_path / "cat", tmp_path / "runs")
    assert s.teacher_cache == tmp_path / "cache"
    assert Settings(model_dir=Path("~/x")).model_dir == tmp_path / "x"  # a flag's Path too
    monkeypatch.setenv("ABSA_EXTRACTOR", "shipped")
    monkeypatch.setenv("ABSA_TEACHER_CACHE", "off")
    assert (Settings().extractor, Settings().teacher_cache) == ("shipped", "off")
    # a keyword in another case is the keyword, unless a path of that name exists
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ABSA_EXTRACTOR", "Shipped")
    monkeypatch.setenv("ABSA_TEACHER_CACHE", " OFF")
    assert (Settings().extractor, Settings().teacher_cache) == ("shipped", "off")
    (tmp_path / "Shipped").mkdir()
    assert Settings().extractor == Path("Shipped")
    monkeypatch.setenv("ABSA_SHADOW_MODEL", "Held ")
    assert Settings().shadow_model == "held"
    monkeypatch.setenv("ABSA_SHADOW_MODEL", "~/v2")
    assert Settings().shadow_model == tmp_path / "v2"


def test_a_registry_that_is_no_registry_is_refused_not_the_fallback_served(
    tmp_path: Path,
) -> None:
    """ABSA_REGISTRY on an artifact or on a folder of something else served the shipped
    model without a word (it looked like a registry before its first promotion). Only an
    empty folder is that (a fresh volume: its lost+found and hidden entries aside)."""
    from absa.errors import RegistryError
    from absa.model.runtime import DEFAULT_MODEL_DIR

    artifact = tmp_path / "artifact"
    artifact.mkdir()
    (artifact / "metadata.json").write_text("{}")
    (artifact / "model.onnx").write_bytes(b"")
    with pytest.raises(RegistryError, match="is a model artifact, not a registry") as e:
        Settings(registry=artifact).model_path()
    assert "ABSA_MODEL_DIR" in str(e.value)

    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("hello")
    with pytest.raises(RegistryError, match="is not a model registry") as e:
        Settings(registry=other).model_path()
    assert "notes.txt" in str(e.value)

    pointer = tmp_path / "pointer"  # CURRENT a directory: the registry's own message
    (pointer / "CURRENT").mkdir(parents=True)
    with pytest.raises(RegistryError, match="CURRENT") as e:
        Settings(registry=pointer).model_path()
    assert "not a model registry" not in str(e.value) and "is a folder" in str(e.value)

    fresh = tmp_path / "fresh"
    (fresh / "lost+found").mkdir(parents=True)
    (fresh / ".lock").write_text("")
    assert Settings(registry=fresh).model_path() == DEFAULT_MODEL_DIR
    assert Settings(registry=fresh, model_dir=artifact).model_path() == artifact


@pytest.mark.parametrize(
    "name", ["ABSA_MODEL_DIR", "ABSA_REGISTRY", "ABSA_EXTRACTOR", "ABSA_CATEGORY_MODEL"]
)
def test_an_empty_variable_is_unset(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``ABSA_EXTRACTOR=`` (a unit's or compose's empty default) read as Path('.'): absa.load()
    then failed on the working directory, "not a model artifact", and ABSA_REGISTRY= made
    it the registry."""
    from absa import load

    for other in ("ABSA_MODEL_DIR", "ABSA_REGISTRY", "ABSA_EXTRACTOR", "ABSA_CATEGORY_MODEL"):
        monkeypatch.delenv(other, raising=False)
    monkeypatch.setenv(name, "")
    settings = Settings()
    assert [settings.model_dir, settings.registry, settings.extractor] == [None] * 3
    assert settings.category_model is None
    (burger,) = load()("The burger was great", aspects=["burger"])
    assert burger.label == "positive"


def test_an_empty_key_or_token_is_still_the_feature_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """compose's ``ABSA_API_KEY: ${ABSA_API_KEY:-}``: empty is no key asked for."""
    monkeypatch.setenv("ABSA_API_KEY", "")
    monkeypatch.setenv("ABSA_ADMIN_TOKEN", "")
    settings = Settings()
    assert settings.api_keys() == ()
    assert settings.admin_token is None or not settings.admin_token.get_secret_value()


@pytest.mark.parametrize(("name", "field"), [("ABSA_PORT", "port"), ("ABSA_DEVICE", "device")])
def test_an_empty_setting_that_is_no_path_is_still_refused(
    name: str, field: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Empty is unset for paths only: read as the code's default, ABSA_HOST= would have
    served on 127.0.0.1 in a container whose image says 0.0.0.0, and said nothing."""
    monkeypatch.setenv(name, "")
    with pytest.raises(ValidationError, match=field):
        Settings()


def test_a_misspelt_variable_is_warned_of_with_the_setting_meant(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """ABSA_MODLE_DIR=/nonexistent ABSA_PROT=1 absa serve served the shipped model on port
    8000 without a word (extra="ignore"): every command warns of each ABSA_* variable that
    is not a setting, once, with the setting meant where one is close."""
    from absa.cli import main

    for name in ("ABSA_MODLE_DIR", "ABSA_PROT", "ABSA_ZZZ"):
        monkeypatch.setenv(name, "/nonexistent")
    monkeypatch.setenv("ABSA_DATA_DIR", "/data")  # read by the benchmarks and the tests
    monkeypatch.setenv("ABSA_EXTRACTOR_DIR", "shipped")  # an alias of ABSA_EXTRACTOR
    monkeypatch.setenv("ABSA_LOG_FORMAT", "text")
    with caplog.at_level("WARNING", logger="absa"):
        assert main(["predict", "--text", "the food", "--aspect", "food"]) == 0
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warned == [
        "ABSA_MODLE_DIR is not a setting (ignored): did you mean ABSA_MODEL_DIR?",
        "ABSA_PROT is not a setting (ignored): did you mean ABSA_PORT?",
        "ABSA_ZZZ is not a setting (ignored)",
    ], warned


def test_the_variables_read_elsewhere_are_not_settings_and_are_used() -> None:
    """OTHER_VARIABLES, the ABSA_* names read on purpose outside Settings (so never warned
    of), is the list the repository really reads: none is a setting too, and each is named
    somewhere outside settings.py."""
    from absa.settings import OTHER_VARIABLES, setting_variables, unknown_variables

    root = Path(__file__).resolve().parents[1]
    assert not OTHER_VARIABLES & setting_variables()
    assert {"ABSA_MODEL_DIR", "ABSA_EXTRACTOR", "ABSA_EXTRACTOR_DIR"} <= setting_variables()
    assert "ABSA_PROMETHEUS_MULTIPROC_DIR" not in setting_variables()  # aliased: not read
    texts = "".join(
        p.read_text(errors="replace")
        for folder in ("benchmarks", "deploy", "tests", "training", "service", "model", ".ci")
        for p in (root / folder).rglob("*")
        if p.is_file() and p.suffix in ("", ".py", ".sh", ".yml", ".yaml", ".md")
    )
    for name in OTHER_VARIABLES:
        assert name in texts, name
    env = {"ABSA_DATA_DIR": "x", "ABSA_PORT": "1", "absa_hots": "x", "HOME": "/"}
    assert unknown_variables(env) == ["absa_hots"]


def settings_table() -> dict[str, str]:
    """README.md's table of the settings: each row's variable (its first cell's first
    backticked name) and the row."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = re.search(r"^### Settings\n(.*?)(?=^##)", readme, re.S | re.M)
    assert section, "README.md has a Settings section"
    rows = [line for line in section.group(1).splitlines() if line.startswith("| `")]
    return {re.match(r"\| `([A-Z0-9_]+)`", row).group(1): row for row in rows}  # type: ignore[union-attr]


def test_every_setting_is_in_the_readmes_table() -> None:
    """ABSA_MAX_TEXT_CHARS, ABSA_MAX_ITEMS, ABSA_MAX_BODY_BYTES, ABSA_MAX_EXPLAIN_ASPECTS and
    ABSA_SHED_DELAY_S were documented nowhere (absa serve --help sent users to a source
    file): every field of Settings has a row, under the variable it is read from, with
    something said of it, and the table names nothing else."""
    from absa.settings import Settings, variable_of

    table = settings_table()
    read_as = set()
    for name, info in Settings.model_fields.items():
        assert info.description, f"{name}: no description (the README's table shows it)"
        variable = variable_of(name)
        read_as.add(variable)
        assert variable in table, f"{variable} is not in README.md's settings table"
    assert set(table) == read_as, set(table) - read_as
