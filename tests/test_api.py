"""The public Python API: `from absa import load`."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import absa
from absa.errors import ArtifactError, InputError
from absa.model.categories import SHIPPED_CATEGORY_MODEL
from absa.model.registry import Registry
from absa.model.runtime import DEFAULT_MODEL_DIR

TEXT = "The fries were soggy but the burger was great"


def test_load_the_shipped_model_and_classify() -> None:
    clf = absa.load()
    assert clf.predictor.runtime.model_dir == DEFAULT_MODEL_DIR
    burger, fries = clf(TEXT, aspects=["burger", "fries"])
    assert (burger.label, fries.label) == ("positive", "negative")
    assert (burger.span, fries.span) == ((29, 35), (4, 9))
    assert burger.score == max(burger.scores.values())
    assert clf.labels == ["negative", "neutral", "positive"]
    (one,) = clf(TEXT, aspects="burger")  # a single term is accepted as is
    assert one.to_dict() == burger.to_dict()
    (explained,) = clf(TEXT, aspects=["burger"], explain=True)
    assert explained.attention and explained.attention[0].token == "The"


def test_answers_are_values_that_can_be_set_members_and_keys() -> None:
    """Frozen, so hashable as a user expects: equal answers hash alike, different ones differ."""
    clf = absa.load()
    first = clf(TEXT, aspects=["burger", "fries"], explain=True)
    again = clf(TEXT, aspects=["burger", "fries"], explain=True)
    assert first == again and {*first, *again} == set(first) and len(set(first)) == 2
    assert {first[0]: "seen"}[again[0]] == "seen"
    plain = clf(TEXT, aspects=["burger"])[0]
    assert plain != first[0]  # the same answer without its explanation is another value


def test_load_follows_the_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    copy = tmp_path / "m"
    shutil.copytree(DEFAULT_MODEL_DIR, copy)
    monkeypatch.setenv("ABSA_MODEL_DIR", str(copy))
    assert absa.load().predictor.runtime.model_dir == copy


def test_load_reads_only_the_settings_it_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server's setting with a bad value in the environment (or a log level) is no reason
    for ``absa.load`` to fail: it reads the model, registry and extractor settings alone."""
    monkeypatch.setenv("ABSA_MAX_QUEUE", "many")
    monkeypatch.setenv("ABSA_LOG_LEVEL", "loud")
    assert absa.load()("The food was great", ["food"])[0].term == "food"
    monkeypatch.setenv("ABSA_REGISTRY", "/nonexistent/registry")  # its own are still read
    with pytest.raises(Exception, match="registry"):
        absa.load()


def test_load_warns_once_of_an_absa_variable_that_is_no_setting(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """ABSA_MODEL_DRI=/elsewhere absa.load() loaded the shipped model without a word, where
    the CLI and the server warn of it: load warns alike, once however often it is called."""
    monkeypatch.setenv("ABSA_MODEL_DRI", "/elsewhere")
    monkeypatch.setenv("ABSA_DATA_DIR", "/data")  # read elsewhere on purpose: no warning
    with caplog.at_level("WARNING", logger="absa"):
        absa.load()
        absa.load()
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warned == ["ABSA_MODEL_DRI is not a setting (ignored): did you mean ABSA_MODEL_DIR?"]


def test_load_expands_the_home_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``absa.load("~/models/m")`` and ``ABSA_MODEL_DIR=~/models/m`` (a compose file, a
    systemd unit: no shell to expand it) looked for a directory named ``~``."""
    monkeypatch.setenv("HOME", str(tmp_path))
    shutil.copytree(DEFAULT_MODEL_DIR, tmp_path / "models" / "m")
    assert absa.load("~/models/m").predictor.runtime.model_dir == tmp_path / "models" / "m"
    monkeypatch.setenv("ABSA_MODEL_DIR", "~/models/m")
    assert absa.load().predictor.runtime.model_dir == tmp_path / "models" / "m"


def test_load_a_registry_serves_its_current_version(tmp_path: Path) -> None:
    reg = Registry(tmp_path / "reg").init()
    shutil.copytree(DEFAULT_MODEL_DIR, tmp_path / "v1")
    reg.add(tmp_path / "v1", "v1")
    reg.promote("v1")
    assert absa.load(tmp_path / "reg").predictor.runtime.model_dir == reg.path("v1")


def test_load_refuses_a_tampered_artifact(tmp_path: Path) -> None:
    copy = tmp_path / "m"
    shutil.copytree(DEFAULT_MODEL_DIR, copy)
    with (copy / "model.onnx").open("ab") as f:
        f.write(b"\0")
    with pytest.raises(ArtifactError, match="sha256"):
        absa.load(copy)


def test_load_refuses_a_graph_that_cannot_run(tmp_path: Path) -> None:
    """Its checksums recorded again, a graph that takes an input the runtime does not give
    (a newer export's, say) loaded, and every call then raised a bare ValueError."""
    import json

    from absa.model.artifact import record_files, record_onnx

    copy = tmp_path / "m"
    shutil.copytree(DEFAULT_MODEL_DIR, copy)
    shutil.copy(SHIPPED_CATEGORY_MODEL / "model.onnx", copy / "model.onnx")
    meta = json.loads((copy / "metadata.json").read_text())
    record_files(meta, copy)
    record_onnx(meta, copy)
    (copy / "metadata.json").write_text(json.dumps(meta))
    with pytest.raises(ArtifactError, match=f"{copy}: the model fails its first prediction"):
        absa.load(copy)


def test_load_of_a_training_run_says_to_export_it(tiny_run: Path) -> None:
    """`absa serve --model RUN` said "export it first"; absa.load(RUN) only "not a model
    artifact (no metadata.json)", which leaves a user guessing what an artifact is."""
    with pytest.raises(ArtifactError, match="is a training run") as err:
        absa.load(tiny_run)
    assert f"absa export --run {tiny_run}" in str(err.value)


def test_batch_keeps_order_and_names_the_bad_item() -> None:
    clf = absa.load()
    items = [
        {"text": TEXT, "aspects": ["fries"]},
        ("The food was great", ["food"]),
        {"text": "The food was awful", "aspects": "food"},
    ]
    out = clf.batch(items, batch_size=2)
    assert [[r.label for r in a] for a in out] == [["negative"], ["positive"], ["negative"]]
    with pytest.raises(InputError, match=r"items\[1\]: aspects\[0\]: aspect 'wine'"):
        clf.batch([items[0], ("The food was great", ["wine"])])
    with pytest.raises(ValueError, match="batch_size"):
        clf.batch(items, batch_size=0)


def test_import_absa_is_light() -> None:
    import subprocess
    import sys

    code = "import absa, sys; assert 'onnxruntime' not in sys.modules; print(absa.__version__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip()


@pytest.mark.parametrize(("setting", "writes"), [(None, False), ("0", True)])
def test_onnxruntime_telemetry_is_off_unless_asked_for(
    tmp_path: Path, setting: str | None, writes: bool
) -> None:
    """onnxruntime 1.32 keeps a device id under $HOME/.cache and sends usage events to
    Microsoft unless ORT_DISABLE_TELEMETRY is set: absa sets it, and leaves a user's own
    setting alone. (The test's own CI runs with CI=true, which silences onnxruntime too: the
    first CI run to land this test failed on that, so the child's environment drops it.)"""
    import os
    import subprocess
    import sys

    # onnxruntime also stays quiet where CI or GITHUB_ACTIONS is set (as on a CI runner)
    # and writes under XDG_CACHE_HOME where that is set: none of them may leak in here.
    quiet = {"ORT_DISABLE_TELEMETRY", "CI", "GITHUB_ACTIONS", "XDG_CACHE_HOME"}
    env = {k: v for k, v in os.environ.items() if k not in quiet}
    env["HOME"] = str(tmp_path)
    if setting is not None:
        env["ORT_DISABLE_TELEMETRY"] = setting
    code = f"import absa; absa.load()({TEXT!r}, aspects=['burger'])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / ".cache").exists() == writes


@pytest.mark.parametrize(
    ("text", "aspects", "words"),
    [
        ("good food", [{"term": "food", "start": 5.0, "end": 9.0}], "start is a float"),
        ("good food", [{"term": "food", "start": "5", "end": 9}], "start is a str"),
        ("good food", [{"term": "food", "start": 5, "end": None}], "end is a NoneType"),
        ("good food", [{"term": "food", "start": True, "end": 9}], "start is a bool"),
        (None, ["food"], "the text must be a string, not None"),
        (b"good food", ["food"], "the text must be a string, not bytes"),
    ],
)
def test_bad_types_are_input_errors_not_python_ones(
    text: object, aspects: list, words: str
) -> None:
    """The Python API has no schema in front of it: offsets that are not integers (a bool
    is not one either) and a text that is not a string are InputError, as README says."""
    clf = absa.load()
    with pytest.raises(InputError, match=words):
        clf(text, aspects)  # type: ignore[arg-type]


def test_numpy_offsets_are_integers_too() -> None:
    """Spans read from a data frame carry numpy integers: they are offsets like any int."""
    import numpy as np

    (r,) = absa.load()("good food", [{"term": "food", "start": np.int64(5), "end": np.int32(9)}])
    assert r.span == (5, 9) and type(r.start) is int


def test_auto_asks_the_extractor_as_over_http() -> None:
    """aspects="auto" is the HTTP API's word for "find them": the same in Python, not a
    term "auto" to look for."""
    found = absa.load(extractor="shipped")("The fries were soggy but the burger was great", "auto")
    assert {r.term for r in found} >= {"fries", "burger"}
    assert all(r.extracted is not None for r in found)
    with pytest.raises(InputError, match="no aspect extractor"):
        absa.load()(TEXT, "auto")


def test_the_readme_example_is_what_the_shipped_model_answers() -> None:
    """README's Python API example quotes scores; a new shipped model must bring them along
    (they were an earlier model's for several releases)."""
    import re

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    quoted = {
        m.group(1): float(m.group(2))
        for m in re.finditer(r"AspectPrediction\(term='(\w+)'.*?score=([\d.]+)", readme)
    }
    assert set(quoted) == {"burger", "fries"}
    got = {r.term: r.score for r in absa.load()(TEXT, aspects=["burger", "fries"])}
    assert got == quoted  # as printed: six places


def test_the_readme_python_example_runs_as_written() -> None:
    """Its lines used texts of "..." that raised InputError when run."""
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    section = readme.split("## Python API", 1)[1]
    code = section.split("```python", 1)[1].split("```", 1)[0]
    exec(compile(code, "README.md (Python API)", "exec"), {})  # noqa: S102


def test_the_readme_quotes_the_shipped_models_test_scores() -> None:
    """README's results name the shipped version and its accuracy / macro-F1 on each test
    set; they must be the ones its eval.json records (rounded once, to one decimal)."""
    import json
    import re

    from absa.model.runtime import DEFAULT_MODEL_DIR

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    version = json.loads((DEFAULT_MODEL_DIR / "metadata.json").read_text())["version"]
    results = json.loads((DEFAULT_MODEL_DIR / "eval.json").read_text())["results"]
    want = {
        name: f"{100 * results[key]['accuracy']:.1f} / {100 * results[key]['macro_f1']:.1f}"
        for key, name in (("rest14", "Rest14"), ("lap14", "Lap14"), ("twitter", "Twitter"),
                          ("mams", "MAMS"))
    }  # fmt: skip
    start = readme.index(f"- Shipped model {version} (")  # a new version: say its scores
    quoted = readme[start : readme.index("(accuracy / macro-F1 %", start)]
    got = dict(re.findall(r"(Rest14|Lap14|Twitter|MAMS) (\d+\.\d / \d+\.\d)", quoted))
    assert got == want, version


def test_batch_runs_batch_size_aspects_per_onnxruntime_call() -> None:
    """The docstring's promise: batch_size=100 ran 64 and 36, the runtime's own cap, and a
    GPU user's large batches never reached the session."""
    clf = absa.load(device="cpu", threads=1)
    rt = clf.predictor.runtime
    session, sizes = rt.session, []

    class Counting:  # onnxruntime's session, its calls counted
        def run(self, names: list[str], feed: dict) -> list:
            sizes.append(len(feed["input_ids"]))
            return session.run(names, feed)

    rt.session = Counting()
    items = [("The food was great", ["food"])] * 100
    out = clf.batch(items, batch_size=100)
    assert sizes == [100] and len(out) == 100
    sizes.clear()
    clf.batch([(TEXT, ["fries", "burger", "but"])] * 2, batch_size=2)  # 3 aspects in one item
    assert sizes == [2, 2, 2]


@pytest.mark.parametrize("size", [0, -1, "64", 2.5, None])
def test_a_bad_batch_size_is_an_input_error(size: object) -> None:
    """ "64" and None were TypeErrors from a comparison, 2.5 was taken."""
    with pytest.raises(InputError, match="batch_size must be a whole number >= 1"):
        absa.load().batch([(TEXT, ["fries"])], batch_size=size)  # type: ignore[arg-type]


def test_a_numpy_array_of_aspects_is_an_input_error_not_an_ambiguous_truth() -> None:
    """A list column read from Parquet gives numpy arrays: two aspects or more raised
    numpy's "truth value of an array ... is ambiguous" from the check for "auto"."""
    import numpy as np

    clf = absa.load()
    with pytest.raises(InputError, match="aspects or categories must be a list, not ndarray"):
        clf(TEXT, np.array(["burger", "fries"]))
    with pytest.raises(InputError, match=r"items\[0\]: aspects or categories must be a list"):
        clf.batch([{"text": TEXT, "aspects": np.array(["burger", "fries"])}])


def test_load_refuses_a_bad_device_or_thread_count_as_input() -> None:
    with pytest.raises(InputError, match="device must be auto, cpu or cuda, not 'gpu'"):
        absa.load(device="gpu")
    with pytest.raises(InputError, match="threads must be a whole number >= 0"):
        absa.load(threads=-2)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"model": 5}, "model must be a path .*, not int"),
        ({"model": b"model/artifacts/default"}, "model must be a path .*, not bytes"),
        ({"extractor": 5}, "extractor must be a path .*, not int"),
        ({"extractor": True}, "extractor must be a path .*, not bool"),
    ],
)
def test_load_refuses_a_model_or_extractor_that_is_not_a_path(kwargs: dict, words: str) -> None:
    """load(5) was pathlib's TypeError and load(extractor=5) pydantic's ValidationError of
    ten lines of validator names; device and threads already said what was wrong."""
    with pytest.raises(InputError, match=words):
        absa.load(**kwargs)


def test_aspects_or_categories_as_bytes_are_refused_whole_not_byte_by_byte() -> None:
    """bytes is a Sequence: b"burger" was read as the aspects 98, 117, ... ("aspects[0]: an
    aspect is a term ...: '98'") and b"food" as the category 102."""
    clf = absa.load()
    with pytest.raises(InputError, match="aspects or categories must be a list, not bytes"):
        clf(TEXT, b"burger")  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"items\[0\]: aspects or categories must be a list"):
        clf.batch([(TEXT, b"burger")])  # type: ignore[list-item]
    cats = absa.load(DEFAULT_MODEL_DIR.parent / "category")
    with pytest.raises(InputError, match="aspects or categories must be a list, not bytes"):
        cats("The food was great", categories=b"food")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("items", "kind"),
    [(None, "NoneType"), (5, "int"), (TEXT, "str"), ({"text": TEXT, "aspects": ["fries"]}, "dict")],
)
def test_batch_of_something_not_a_list_of_items_is_an_input_error(items: object, kind: str) -> None:
    """None was a TypeError ("'NoneType' object is not iterable"); a text, or one item's
    dict, was taken apart into characters or keys, each refused as "items[0]"."""
    with pytest.raises(InputError, match=f"items must be a list of items .*, not {kind}"):
        absa.load().batch(items)  # type: ignore[arg-type]


@pytest.mark.parametrize("key", ["aspect", "term", "terms"])
def test_a_batch_item_that_names_its_aspects_under_another_key_is_refused(key: str) -> None:
    """{"text", "aspect": [...]} (one letter short) had no aspects: without an extractor it
    was refused as "no aspects", with one the aspects asked for were passed over and the
    extractor's answered instead. Other keys (an id, a gold label) are still let through."""
    clf = absa.load(extractor="shipped")
    said = f"items\\[0\\]: '{key}' is not a key of an item: 'aspects'"
    with pytest.raises(InputError, match=said):
        clf.batch([{"text": TEXT, key: ["fries"]}])
    (answer,) = clf.batch([{"text": TEXT, "aspects": ["fries"], "id": 7, "label": "negative"}])
    assert [a.term for a in answer] == ["fries"]


def _labels(clf: absa.Classifier, text: str) -> list[str]:  # top level: a pool pickles it
    return [p.label for p in clf(text, "auto")]


def test_a_classifier_pickles_as_the_artifact_it_loaded(tmp_path: Path) -> None:
    """multiprocessing, Ray, Dask and Spark send a function's arguments by pickle: a
    classifier travels as the artifact directory it loaded (the registry version it was
    given then, not the one current when it arrives) and loads, verified, where it lands."""
    import multiprocessing
    import pickle

    reg = Registry(tmp_path / "reg").init()
    shutil.copytree(DEFAULT_MODEL_DIR, tmp_path / "v1")
    reg.add(tmp_path / "v1", "v1")
    reg.promote("v1")
    clf = absa.load(reg.root, extractor="shipped", threads=1)
    blob = pickle.dumps(clf)
    assert len(blob) < 2000  # the paths, not the model
    again = pickle.loads(blob)
    assert again.predictor.runtime.model_dir == reg.path("v1")
    assert again.predictor.runtime.session.get_session_options().intra_op_num_threads == 1
    assert [p.to_dict() for p in again(TEXT, "auto")] == [p.to_dict() for p in clf(TEXT, "auto")]
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.starmap(_labels, [(clf, TEXT)]) == [_labels(clf, TEXT)]
    with (reg.path("v1") / "model.onnx").open("ab") as f:  # changed since: refused on arrival
        f.write(b"\0")
    with pytest.raises(ArtifactError, match="sha256"):
        pickle.loads(blob)
    with pytest.raises(TypeError, match="absa.load"):
        pickle.dumps(absa.Classifier(clf.predictor.__class__(clf.predictor.runtime)))


def test_a_classifier_loaded_by_a_relative_path_pickles_for_another_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker of a pool or cluster runs elsewhere: the path it gets must not depend on the
    directory the classifier was loaded from."""
    import copy
    import pickle

    shutil.copytree(DEFAULT_MODEL_DIR, tmp_path / "m")
    monkeypatch.chdir(tmp_path)
    blob = pickle.dumps(absa.load("m", threads=1))
    monkeypatch.chdir(tmp_path.parent)
    again = pickle.loads(blob)
    assert again.predictor.runtime.model_dir == tmp_path / "m"
    assert again(TEXT, ["burger"])[0].label == "positive"
    made = absa.Classifier(again.predictor)  # not by load: still copies, shares the model
    assert copy.copy(made).predictor is made.predictor


def test_a_pickle_refuses_another_model_put_at_its_path(tmp_path: Path) -> None:
    """Checksums alone verify an artifact against its own metadata: another artifact copied
    to the path (a re-export, a copy over it) or an edited metadata.json (other labels)
    loaded without a word, and a pool's workers answered with another model than the
    caller's."""
    import json
    import pickle

    shutil.copytree(DEFAULT_MODEL_DIR, tmp_path / "m")
    blob = pickle.dumps(absa.load(tmp_path / "m", threads=1))
    meta_path = tmp_path / "m" / "metadata.json"
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**meta, "labels": meta["labels"][::-1]}))
    with pytest.raises(ArtifactError, match="changed since this classifier was pickled"):
        pickle.loads(blob)
    meta_path.write_text(json.dumps(meta))  # as it was, whitespace aside: the same model
    assert pickle.loads(blob)(TEXT, ["burger"])[0].label == "positive"
    shutil.rmtree(tmp_path / "m")
    shutil.copytree(SHIPPED_CATEGORY_MODEL, tmp_path / "m")
    with pytest.raises(ArtifactError, match="changed since this classifier was pickled"):
        pickle.loads(blob)


def test_a_batch_item_asking_with_its_key_may_carry_gold_term_and_category_keys() -> None:
    """SemEval-style rows carry a term and a category beside what they ask: an item with
    ``aspects`` and a gold ``category`` (or ``categories`` and an ``aspect``) was refused as
    a near miss, and a term model's user sent to a ``categories`` key it refuses. A JSON
    list pair is an item as a tuple is."""
    clf = absa.load(threads=1)
    gold = {"text": TEXT, "aspects": ["fries"], "category": "food", "term": "fries"}
    (answer,) = clf.batch([gold])
    assert [a.term for a in answer] == ["fries"]
    with pytest.raises(
        InputError, match=r"items\[0\]: 'category' is not a key of an item: 'aspects'"
    ):
        clf.batch([{"text": TEXT, "category": ["food"]}])
    cats = absa.load(SHIPPED_CATEGORY_MODEL, threads=1)
    (answer,) = cats.batch([{"text": TEXT, "categories": ["food"], "aspect": "fries"}])
    assert [a.category for a in answer] == ["food"]
    with pytest.raises(
        InputError, match=r"items\[0\]: 'aspect' is not a key of an item: 'categories'"
    ):
        cats.batch([{"text": TEXT, "aspect": ["fries"]}])
    (pair,) = clf.batch([[TEXT, ["fries"]]])  # type: ignore[list-item]
    assert [p.to_dict() for p in pair] == [p.to_dict() for p in clf(TEXT, ["fries"])]


def test_a_missing_extractor_named_by_the_environment_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A script that passes a model and no extractor got "/opt/absa/extractor: does not
    exist", from an ABSA_EXTRACTOR it never set itself."""
    monkeypatch.setenv("ABSA_EXTRACTOR", str(tmp_path / "gone"))
    with pytest.raises(ArtifactError, match=r"gone: does not exist \(ABSA_EXTRACTOR names it"):
        absa.load(DEFAULT_MODEL_DIR, threads=1)
    assert absa.load(DEFAULT_MODEL_DIR, extractor="", threads=1)(TEXT, ["fries"])
    with pytest.raises(ArtifactError, match=r"gone: does not exist$"):  # its own argument
        absa.load(DEFAULT_MODEL_DIR, extractor=tmp_path / "gone", threads=1)


def test_asking_a_classifier_without_an_extractor_to_find_aspects_says_how_to_load_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """It said "no aspect extractor is configured (setting ABSA_EXTRACTOR)": a server's
    words; from Python the extractor is load's argument."""
    monkeypatch.delenv("ABSA_EXTRACTOR", raising=False)
    clf = absa.load(threads=1)
    for call in (
        lambda: clf("The decor is dated"),
        lambda: clf.batch([("The decor is dated", "auto")]),
    ):
        with pytest.raises(InputError, match=r"absa\.load\(\.\.\., extractor='shipped'\)"):
            call()


def test_a_batch_items_own_explain_is_honoured_as_over_http() -> None:
    """An HTTP batch item is a request of its own, its "explain" its own: the same items in
    Python lost it (no attention, no word)."""
    clf = absa.load()
    items = [
        {"text": "The food was cold", "aspects": ["food"], "explain": True},
        {"text": "The food was cold", "aspects": ["food"]},
        {"text": "The food was cold", "aspects": ["food"], "explain": False},
    ]
    got = [r[0].attention is not None for r in clf.batch(items)]
    assert got == [True, False, False]
    assert [r[0].attention is not None for r in clf.batch(items, explain=True)] == [
        True, True, False
    ]  # fmt: skip
    with pytest.raises(InputError, match=r"items\[0\]: explain must be true or false"):
        clf.batch([{"text": "The food was cold", "aspects": ["food"], "explain": "yes"}])


def test_a_batch_may_return_each_bad_items_error_in_its_place() -> None:
    """One bad item failed the whole batch, where an HTTP batch answers each item: with
    ``errors="return"`` its place holds its InputError and the others are answered as alone."""
    clf = absa.load()
    items = [("The food was cold", ["food"]), ("The food was cold", ["wine"]), ("x", 3)]
    got = clf.batch(items, errors="return")  # type: ignore[arg-type]
    assert got[0] == clf.batch(items[:1])[0]
    assert isinstance(got[1], InputError) and "items[1]: " in str(got[1])
    assert isinstance(got[2], InputError) and "items[2]: " in str(got[2])
    with pytest.raises(InputError, match=r"items\[1\]"):
        clf.batch(items)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="errors must be 'raise' or 'return'"):
        clf.batch(items, errors="skip")  # type: ignore[call-overload]


def test_explain_that_is_no_bool_is_refused_in_every_call() -> None:
    """``explain="no"`` asked for the attention (any true value did) in a call and in a
    batch, where a batch item's own "yes" was refused."""
    clf = absa.load()
    for call in (
        lambda: clf("The food was cold", ["food"], explain="no"),  # type: ignore[arg-type]
        lambda: clf.batch([("The food was cold", ["food"])], explain=1),  # type: ignore[arg-type]
    ):
        with pytest.raises(InputError, match="explain must be true or false"):
            call()


@pytest.mark.parametrize(("aspect", "shown"), [(1, "not int 1"), (None, "not NoneType null")])
def test_an_aspect_of_another_type_is_named_as_it_is(aspect: object, shown: str) -> None:
    """``aspects=[1]`` was said as if it were the string '1'."""
    with pytest.raises(InputError, match=f"a span with term, start, end, {shown}$"):
        absa.load()("The food was cold", [aspect])  # type: ignore[list-item]


def test_load_of_an_empty_path_is_refused_and_shipped_is_the_packaged_model(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``load("")`` looked for a model in the working directory (Path("") is "."), and
    "shipped", the extractor's word for the packaged one, was a path of that name."""
    with pytest.raises(InputError, match="model is an empty path"):
        absa.load("")
    monkeypatch.setenv("ABSA_MODEL_DIR", str(tmp_path / "elsewhere"))
    assert absa.load("shipped").predictor.runtime.model_dir == DEFAULT_MODEL_DIR
    assert isinstance(absa.load("shipped")("The food was cold", ["food"])[0], absa.AspectPrediction)


def test_load_of_a_registry_before_its_first_promotion_says_what_it_loads(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """ABSA_REGISTRY naming an empty registry loaded the fallback model without a word (as
    a service does, before the first job promotes a version), where ``load(registry)``
    raises: it is said now."""
    reg = Registry(tmp_path / "reg").init()
    monkeypatch.setenv("ABSA_REGISTRY", str(reg.root))
    with caplog.at_level("WARNING", logger="absa"):
        assert absa.load().predictor.runtime.model_dir == DEFAULT_MODEL_DIR
    assert f"registry {reg.root} has no current version yet (ABSA_REGISTRY)" in caplog.text
    shutil.copytree(DEFAULT_MODEL_DIR, tmp_path / "v1")
    reg.add(tmp_path / "v1", "v1")
    reg.promote("v1")
    caplog.clear()
    with caplog.at_level("WARNING", logger="absa"):
        assert absa.load().predictor.runtime.model_dir == reg.path("v1")
    assert "no current version" not in caplog.text


def test_metadata_is_the_callers_copy() -> None:
    clf = absa.load()
    clf.metadata["name"] = "changed"
    assert clf.metadata["name"] != "changed" and "changed" not in repr(clf)


USER_CODE = """
import absa

clf = absa.load()
(r,) = clf("The food was great", aspects=["food"])
label: str = r.label
start: int = r.start
wrong: int = r.label
(c,) = clf("The food was great", categories=["food"])
category: str = c.category
c.term
for row in clf.batch([("The food was great", ["food"])]):
    spans = [(p.term, p.start) for p in row]  # a term model's answers, as they are read
"""


def test_a_users_type_checker_reads_the_answers_types(tmp_path: Path) -> None:
    """absa shipped no py.typed, and a call's answers were ``list[Any]``: mypy passed
    ``wrong: int = r.label`` without a word. The package as installed (absa/ with model,
    training and service in it, as .ci/typecheck lays it out), a user's file checked."""
    pytest.importorskip("mypy")
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    tree = tmp_path / "site" / "absa"
    tree.mkdir(parents=True)
    for entry in (root / "absa").iterdir():
        if entry.name != "__pycache__":
            (tree / entry.name).symlink_to(entry)
    for part in ("model", "training", "service"):
        (tree / part).symlink_to(root / part)
    (tmp_path / "user.py").write_text(USER_CODE)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent"]
        + ["--ignore-missing-imports", "--no-error-summary", "user.py"],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(tmp_path / "site")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    said = [line.split(": error: ")[1] for line in done.stdout.splitlines() if ": error: " in line]
    assert sorted(said) == [
        '"CategoryPrediction" has no attribute "term"  [attr-defined]',
        'Incompatible types in assignment (expression has type "str", variable has type "int")'
        "  [assignment]",
    ], done.stdout + done.stderr
