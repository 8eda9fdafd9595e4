"""The artifact directory: its one owner. Writing, reading and verifying live here, side by
side, so the service at start-up, hot reload, the CLI and the Python API all apply the same
checks. No torch.

    model.onnx       the graph (possibly int8)
    metadata.json    kind, name, version, labels, configs, metrics, provenance, the sha256 of
                     every other file (``files``), and the recorded torch/onnxruntime parity
                     check
    pipeline.json    the text pipeline, with vocab.json or tokenizer.json (a word pipeline
                     made with word tokenizer 2 or later says so: "word_tokenizer")
    README.md        the model card (optional)

Every file of the directory but metadata.json is hashed into ``metadata["files"]`` (by
export, ``record_files``) and ``load`` verifies each one, and every path the metadata or the
pipeline names must resolve inside the directory. Whoever changes a file after export (a
model card rewritten) records the hashes again with ``record_files`` + ``write_metadata``.
"""

from __future__ import annotations

import errno
import fcntl
import glob
import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from absa.errors import ArtifactError, raise_if_full
from absa.model.atomic import atomic_write_json
from absa.model.text import WordPiecePipeline, WordPipeline, load_pipeline

log = logging.getLogger(__name__)

KIND = "absa-artifact"
EXTRACTOR_KIND = "absa-extractor"  # an aspect term tagger (absa.model.extractor)
#: what an artifact of each kind is, and where it is given: a wrong-kind error says both
KIND_IS = {KIND: "a sentiment model", EXTRACTOR_KIND: "an aspect extractor"}
KIND_GOES = {
    KIND: "give it as ABSA_MODEL_DIR, --model, absa.load(path)",
    EXTRACTOR_KIND: "give it as ABSA_EXTRACTOR, --extractor, absa.load(extractor=path)",
}
METADATA = "metadata.json"
ONNX = "model.onnx"
STAGING = ".export-"  # the prefix of an export's temporary directory, beside its output
#: what ``tempfile.mkdtemp`` adds to a prefix (8 of [a-z0-9_]): another name is never taken
#: for a temporary directory (".out.v2.x1" is not one of ".out."'s)
_MKDTEMP_SUFFIX = re.compile(r"[a-z0-9_]{8}\Z")
PARITY_ATOL = 1e-4  # max |p_torch - p_onnxruntime| an export may show on its dev set


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with Path(path).open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def metadata_digest(metadata: Mapping[str, Any]) -> str:
    """The sha256 of ``metadata`` as canonical JSON (keys sorted): since the metadata records
    every other file's sha256, one digest of the whole artifact, which changes whenever a
    file or a recorded setting does (two exports given one version name differ in it)."""
    canonical = json.dumps(metadata, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def is_artifact(directory: Path) -> bool:
    return (Path(directory) / METADATA).is_file()


def write_metadata(directory: Path, metadata: dict) -> None:
    """Write metadata.json whole (absa.model.atomic): a reader never sees half of it."""
    atomic_write_json(Path(directory) / METADATA, metadata)


#: the artifact layout this absa writes (metadata ``format``), and the newest it reads: raised
#: whenever an export records something an older absa would read wrongly or pass over (a
#: new tokenizer, a map after the softmax, a graph input), so that an older server refuses
#: the artifact instead of answering otherwise. An artifact without one is format 1.
FORMAT = 1


def read_metadata(directory: Path, kind: str = KIND) -> dict:
    """metadata.json of an artifact of ``kind``, checked to be one: ArtifactError otherwise
    (a sentiment model is never loaded as an extractor, nor the other way round)."""
    path = Path(directory) / METADATA
    if not path.is_file():
        # a typo, or the graph's path for its directory's, is said as such
        if not Path(directory).exists():
            raise ArtifactError(f"{directory}: does not exist")
        if not Path(directory).is_dir():
            raise ArtifactError(f"{directory}: is a file; an artifact is a directory")
        if (Path(directory) / "run.json").is_file():  # a run given for its export
            raise ArtifactError(
                f"{directory} is a training run, not an exported model: export it first "
                f"(`absa export --run {directory} --out ARTIFACT_DIR`) and use ARTIFACT_DIR"
            )
        raise ArtifactError(f"{directory}: not a model artifact (no {METADATA})")
    try:
        metadata = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ArtifactError(f"{path}: {e}") from None
    if not isinstance(metadata, dict) or metadata.get("kind") != kind:
        found = metadata.get("kind") if isinstance(metadata, dict) else None
        raise ArtifactError(_wrong_kind(directory, path, found, metadata, kind))
    _check_format(path, metadata)
    return metadata


def _check_format(path: Path, metadata: dict) -> None:
    """ArtifactError where the metadata's ``format`` is newer than ``FORMAT`` (an export of
    a later absa: this one would read it wrongly) or is not a format number."""
    found = metadata.get("format", 1)
    if isinstance(found, bool) or not isinstance(found, int) or found < 1:
        raise ArtifactError(f"{path}: 'format' is {found!r}, not an artifact format number")
    if found > FORMAT:
        from absa import __version__

        by = metadata.get("absa_version")
        raise ArtifactError(
            f"{path}: artifact format {found}"
            + (f" (written by absa {by})" if isinstance(by, str) else "")
            + f"; this absa ({__version__}) reads format {FORMAT} and older: upgrade absa to "
            "load it, or serve an artifact this version exported"
        )


def _wrong_kind(directory: Path, path: Path, found: object, metadata: object, kind: str) -> str:
    """The error of an artifact of another kind than ``kind``: what it is and where it goes
    (an extractor given as the model, the model as the extractor), where both are known."""
    if found not in KIND_IS or kind not in KIND_IS:
        return f"{path}: kind {found!r} is not {kind!r}"
    from absa.model.categories import CATEGORY, CATEGORY_GOES

    if found == KIND and isinstance(metadata, dict) and metadata.get("task") == CATEGORY:
        what, goes = f"an aspect-category model (task {CATEGORY!r})", CATEGORY_GOES
    else:
        what, goes = f"{KIND_IS[str(found)]} (kind {found!r})", KIND_GOES[str(found)]
    return f"{directory}: is {what}, but {KIND_IS[kind]} is needed here ({goes})"


def amend_metadata(directory: Path, **fields: object) -> dict:
    """Add or replace top-level fields of metadata.json (e.g. the retraining job's gate result
    and evaluation); returns the new metadata."""
    metadata = read_metadata(directory)
    metadata.update(fields)
    write_metadata(directory, metadata)
    return metadata


def new_metadata(
    kind: str,
    name: str,
    version: str | None,
    labels: Sequence[str],
    model_config: dict,
    provenance: Mapping[str, object],
    onnx: dict,
    *,
    task: str | None = None,
    categories: Sequence[str] | None = None,
    calibration: dict | None = None,
) -> dict:
    """The metadata an export starts from (``version`` defaults to a UTC timestamp); the
    optional parts only where given: ``task`` (what the model answers: aspect terms or
    categories), ``categories`` (a category model's), ``calibration`` (its temperature)."""
    from absa import __version__

    now = datetime.now(UTC)
    meta: dict = {"kind": kind, "format": FORMAT, "absa_version": __version__}
    if task is not None:
        meta["task"] = task
    meta.update(
        name=name,
        version=version or now.strftime("%Y%m%d%H%M%S"),
        created=now.isoformat(timespec="seconds"),
        labels=list(labels),
    )
    if categories is not None:
        meta["categories"] = list(categories)
    meta.update(model_config=model_config, **provenance)
    if calibration is not None:
        meta["calibration"] = calibration
    meta["onnx"] = {"file": ONNX, "sha256": "", **onnx}
    return meta


def refuse_existing(out_dir: Path) -> None:
    """FileExistsError where ``out_dir`` exists, a dangling link included (a rename onto a
    link replaces the link): an artifact is never written over what is there."""
    if Path(out_dir).exists() or Path(out_dir).is_symlink():
        raise FileExistsError(f"{out_dir} exists; export into a new directory")


def _hold(path: Path, blocking: bool) -> int | None:
    """A descriptor of the directory ``path`` holding an exclusive ``flock`` on it: an
    export's claim on its temporary directory, which the OS ends with the process (SIGKILL
    too). None where another process holds it (``blocking`` off) or the path is gone; a
    file system without ``flock`` gives an unlocked descriptor when ``blocking`` (the export
    runs unclaimed), None otherwise (nobody can tell there whether it is in use)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except OSError as e:
        if blocking and e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            return fd
        os.close(fd)
        return None
    return fd


def _same(fd: int, path: Path) -> bool:
    """Whether ``path`` is still the directory ``fd`` was opened on (not removed or renamed
    meanwhile)."""
    try:
        return os.path.samestat(os.fstat(fd), os.lstat(path))
    except OSError:
        return False


def remove_stale_staging(
    folder: Path, prefix: str = STAGING, what: str = "an export"
) -> list[Path]:
    """Remove the temporary directories (``prefix`` and what ``mkdtemp`` adds: ``.export-*``
    unless said) that writers killed by SIGKILL (or a power cut) left in ``folder``: those
    no process holds. A running writer holds a flock on its own (``held_temporary``) and
    is left alone, as is one on a file system without ``flock``, and any other name. Returns
    the ones removed, each logged as the temporary directory of ``what``."""
    removed = []
    try:
        found = sorted(
            p
            for p in Path(folder).glob(f"{glob.escape(prefix)}*")
            if _MKDTEMP_SUFFIX.match(p.name[len(prefix) :]) and not p.is_symlink()
        )
    except OSError:
        return []
    for path in found:
        fd = _hold(path, blocking=False)
        if fd is None:  # a running writer's (or gone meanwhile)
            continue
        try:
            if not _same(fd, path):  # renamed to its output, or removed, before the lock
                continue
            shutil.rmtree(path, ignore_errors=True)
        finally:
            os.close(fd)
        if not path.exists():
            log.info("removed %s: the temporary directory of %s that did not end", path, what)
            removed.append(path)
    return removed


def _claimed_staging(parent: Path, prefix: str) -> tuple[Path, int]:
    """A new temporary directory in ``parent`` and the descriptor holding its flock. Made
    again where another writer's ``remove_stale_staging`` took it for a dead one between
    its making and its lock (it is then gone: the lock is taken on nothing)."""
    while True:
        tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        fd = _hold(tmp, blocking=True)
        if fd is not None and _same(fd, tmp):
            return tmp, fd
        if fd is not None:
            os.close(fd)


@contextmanager
def held_temporary(parent: Path, prefix: str = STAGING, what: str = "an export") -> Iterator[Path]:
    """A new temporary directory ``prefix*`` in ``parent`` (private, as ``mkdtemp`` makes
    it), held (flock) while the block runs, so that a writer killed by SIGKILL leaves one
    the next writer can tell from a running one's; those killed writers left are removed
    first (``remove_stale_staging``, logged as ``what``'s). Removed at the end unless the
    block renamed it away (to its output)."""
    remove_stale_staging(parent, prefix, what)
    tmp, held = _claimed_staging(parent, prefix)
    try:
        yield tmp
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        os.close(held)  # after the rename or the removal: never a dead writer's till then


@contextmanager
def staged(out_dir: Path) -> Iterator[Path]:
    """A temporary directory beside ``out_dir`` to build an artifact in; renamed to
    ``out_dir`` (atomic on one file system: no half artifact is ever visible) when the block
    ends without error, removed otherwise. An existing ``out_dir`` is never replaced. The
    directory is held (flock) while the block runs; the ones killed exports left beside
    ``out_dir`` are removed first (``held_temporary``)."""
    out_dir = Path(out_dir)
    made = [p for p in reversed(out_dir.parents) if not p.exists()]  # outermost first
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    done = False
    try:
        with held_temporary(out_dir.parent) as tmp:
            try:
                tmp.chmod(0o755)  # mkdtemp makes it private; a served artifact must be readable
                yield tmp
                refuse_existing(out_dir)  # made while the artifact was built
                tmp.rename(out_dir)
                done = True
            except OSError as e:  # a full disk: "[Errno 28] No space left on device"
                raise_if_full(out_dir, e)
                raise
    finally:
        for folder in reversed(made) if not done else ():  # a failed export's, innermost first
            try:
                folder.rmdir()
            except OSError:
                break  # another writer put something there meanwhile: theirs now


def record_onnx(metadata: dict, directory: Path) -> None:
    """Point the metadata at the directory's model.onnx and its current checksum."""
    onnx = dict(metadata.get("onnx") or {})
    onnx.update(file=ONNX, sha256=sha256_file(Path(directory) / ONNX))
    metadata["onnx"] = onnx


def _hashed_names(directory: Path) -> list[str]:
    """The files ``record_files`` hashes: every regular file under ``directory`` (relative,
    '/'-separated) except metadata.json and hidden temporary files."""
    directory = Path(directory)
    names = []
    for path in sorted(directory.rglob("*")):
        rel = path.relative_to(directory)
        if any(part.startswith(".") for part in rel.parts) or rel.as_posix() == METADATA:
            continue
        if path.is_file():
            names.append(rel.as_posix())
    return names


def record_files(metadata: dict, directory: Path) -> None:
    """Record the sha256 of every file of the directory but metadata.json (``files``)."""
    directory = Path(directory)
    metadata["files"] = {name: sha256_file(directory / name) for name in _hashed_names(directory)}


def record_checksums(metadata: dict, directory: Path) -> None:
    """``record_onnx`` and ``record_files``: what an export writes before metadata.json."""
    record_onnx(metadata, directory)
    record_files(metadata, directory)


def _inside(directory: Path, name: object, what: str = "model file") -> Path:
    """``directory / name``, refusing names that would resolve outside the directory."""
    if not isinstance(name, str) or not name:
        raise ArtifactError(f"{directory}: the metadata names no {what}")
    path = (directory / name).resolve()
    if not path.is_relative_to(directory.resolve()):
        raise ArtifactError(f"{directory}: {what} {name!r} is outside the artifact")
    return path


def verify_files(metadata: dict, directory: Path) -> dict[str, str]:
    """Check every file ``metadata["files"]`` lists: inside the directory, present, and with
    the recorded sha256. Returns the listing; ArtifactError on the first file that fails."""
    directory = Path(directory)
    files = metadata.get("files")
    if not isinstance(files, dict) or not files:
        raise ArtifactError(
            f"{directory / METADATA}: records no per-file checksums ('files'); this artifact "
            "was made by an older export: re-export it (absa export) to serve it, or, as a "
            "registry's version, record them (absa models rehash VERSION)"
        )
    for name, expected in files.items():
        path = _inside(directory, name, "file")
        if not path.is_file():
            raise ArtifactError(f"{path}: missing (listed in {METADATA})")
        digest = sha256_file(path)
        if not isinstance(expected, str) or digest != expected:
            raise ArtifactError(
                f"{path}: sha256 {digest[:12]}... does not match the metadata's "
                f"{str(expected)[:12]}...; refusing to load"
            )
    return files


def _listed(files: dict[str, str], directory: Path, path: Path, what: str) -> None:
    """``path`` (already confined) must be one of the hashed files."""
    rel = path.relative_to(directory.resolve()).as_posix()
    if rel not in files:
        raise ArtifactError(f"{directory}: {what} {rel!r} has no checksum in {METADATA}")


def require_checksum(art: Artifact, name: str, what: str) -> None:
    """A file the model reads beyond its graph and pipeline (an extractor's character list,
    its CRF transitions) must be hashed in the metadata, as those are, where it exists:
    ArtifactError otherwise (metadata that leaves a file out must not let it change unseen)."""
    path = _inside(art.directory, name, what)
    if path.exists():
        _listed(art.metadata["files"], art.directory, path, what)


def _pipeline_files(directory: Path) -> list[tuple[Path, str]]:
    """pipeline.json and the file it names (vocabulary or tokenizer), each confined."""
    spec_path = _inside(directory, "pipeline.json", "pipeline file")
    try:
        spec = json.loads(spec_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ArtifactError(f"{directory}: text pipeline: {e}") from None
    if not isinstance(spec, dict):
        raise ArtifactError(f"{spec_path}: not a JSON object")
    out = [(spec_path, "pipeline file")]
    for key in ("vocab", "tokenizer"):
        if key in spec:
            out.append((_inside(directory, spec[key], f"pipeline {key}"), f"pipeline {key}"))
    return out


def verify_parity(metadata: dict, where: Path | str) -> None:
    """Refuse an artifact whose metadata does not record a passed torch/onnxruntime check."""
    par = metadata.get("parity")
    if not isinstance(par, dict):
        raise ArtifactError(f"{where}: metadata records no parity check")
    diff, mismatches = par.get("max_abs_diff"), par.get("prediction_mismatches")
    numbers = all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in (diff, mismatches)
    )
    # "not diff <= ATOL": a NaN (a model whose outputs are not numbers) fails too
    if not numbers or mismatches != 0 or not diff <= PARITY_ATOL:  # type: ignore[operator]
        raise ArtifactError(f"{where}: metadata records a failed parity check: {par}")


@dataclass(frozen=True)
class Artifact:
    """A verified artifact directory: its metadata, graph file and text pipeline."""

    directory: Path
    metadata: dict
    onnx_path: Path
    pipeline: WordPipeline | WordPiecePipeline

    @property
    def labels(self) -> list[str]:
        return list(self.metadata["labels"])


_JSON = {dict: "object", list: "list"}


def load(directory: Path | str, require_parity: bool = True, kind: str = KIND) -> Artifact:
    """Open and verify an artifact: kind, every file the metadata and the pipeline name
    inside the directory, the sha256 of every file (``files``) and of the model file, and
    (unless ``require_parity`` is off, as during export before the check has run) a passed
    parity record. The same checks at start-up, on hot reload and in the CLI."""
    directory = Path(directory)
    metadata = read_metadata(directory, kind)
    onnx_meta = metadata.get("onnx")
    if not isinstance(onnx_meta, dict):
        raise ArtifactError(f"{directory / METADATA}: no 'onnx' entry")
    onnx_path = _inside(directory, onnx_meta.get("file"))
    if not onnx_path.is_file():
        raise ArtifactError(f"{onnx_path}: missing")
    files = verify_files(metadata, directory)
    _listed(files, directory, onnx_path, "model file")
    for path, what in _pipeline_files(directory):
        _listed(files, directory, path, what)
    digest = sha256_file(onnx_path)
    expected = str(onnx_meta.get("sha256", ""))
    if digest != expected:
        raise ArtifactError(
            f"{onnx_path}: sha256 {digest[:12]}... does not match the metadata's "
            f"{expected[:12]}...; refusing to load"
        )
    if require_parity:
        verify_parity(metadata, directory)
    labels = metadata.get("labels")
    if not isinstance(labels, list) or not labels or not all(isinstance(x, str) for x in labels):
        raise ArtifactError(f"{directory / METADATA}: no labels")
    # what the runtime reads of the metadata, which no checksum covers: of another shape, a
    # server started on it ended in a traceback (and `absa serve`'s check let it through)
    for key, shape in (("model_config", dict), ("categories", list), ("calibration", dict)):
        if metadata.get(key) is not None and not isinstance(metadata[key], shape):
            raise ArtifactError(f"{directory / METADATA}: {key!r} is not a JSON {_JSON[shape]}")
    try:
        pipeline = load_pipeline(directory)
    # TypeError: a file of the wrong JSON shape (a vocabulary that is an object), which
    # verifies where another tool recorded its checksum
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ArtifactError(f"{directory}: text pipeline: {e}") from None
    return Artifact(directory, metadata, onnx_path, pipeline)


def check_serves(art: Artifact, task: str | None = None) -> None:
    """What a server's load refuses beyond the checksums ``load`` verified: a model of
    another task (``task``: terms or category, where given), a graph onnxruntime cannot
    open (``check_opens``), and for a sentiment model what the runtime checks as it builds
    one (labels the graph gives as many probabilities of, a top-label map it can apply)
    and a first prediction, as a worker makes before it serves (a graph that takes inputs
    the runtime does not give). ArtifactError otherwise."""
    if task is not None:
        from absa.model.categories import check_task

        check_task(art.metadata, task, art.directory)
    session = check_opens(art.directory)
    if art.metadata.get("kind") == KIND:
        from absa.model.runtime import Runtime, first_prediction

        first_prediction(Runtime(art.directory, art.metadata, art.pipeline, session), art.directory)


def check_opens(directory: Path) -> Any:
    """onnxruntime opens the artifact's graph: a model.onnx cut short or not a graph, whose
    sha256 was recorded again, passes every checksum and fails only when a server loads it.
    ArtifactError naming the file otherwise; the session (one CPU thread) where it opens."""
    import onnxruntime as ort

    path = Path(directory) / ONNX
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    try:
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime's own kinds (InvalidProtobuf, Fail, ...), no base
        said = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ArtifactError(f"{path}: onnxruntime cannot open it: {said}") from None


class _WithoutPreprocessAdvice(logging.Filter):
    """Leaves out onnxruntime's "Please consider to run pre-processing before quantization"
    (a WARNING on every dynamic quantisation, pointing at its image examples): the served
    graph is the one the quantiser makes of the exported one, gated on dev as it is."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


def quantize_graph(
    tmp: Path,
    metadata: dict,
    per_channel: bool = False,
    op_types: list[str] | None = None,
    nodes: list[str] | None = None,
) -> int:
    """Replace a staged artifact's model.onnx by onnxruntime's int8 dynamic quantisation of
    it (``per_channel``: a weight scale per output channel, not per tensor; ``op_types``:
    only these operators, e.g. ``["Gather"]`` for the embedding tables; ``nodes``: only the
    nodes of these names) and record the new checksums; the fp32 graph's size in bytes."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    fp32 = tmp / ONNX
    q = tmp / "model.int8.onnx"
    size_fp32 = fp32.stat().st_size
    # the quantiser writes an inferred copy of the graph beside it, then the int8 graph: on a
    # full disk the copy is cut short unseen, and reading it back ends in a protobuf error
    need, free = 2 * size_fp32, shutil.disk_usage(tmp).free
    if free < need:
        raise ArtifactError(
            f"{tmp.parent}: {free / 1e6:.1f} MB free, and int8 quantisation needs about "
            f"{need / 1e6:.1f} MB there for its copies of the graph"
        )
    advice = _WithoutPreprocessAdvice()
    logging.getLogger().addFilter(advice)  # its own warning goes to the root logger
    try:
        quantize_dynamic(
            str(fp32),
            str(q),
            weight_type=QuantType.QInt8,
            per_channel=per_channel,
            op_types_to_quantize=op_types,
            nodes_to_quantize=nodes,
        )
    except Exception as e:  # noqa: BLE001 - onnx's and protobuf's own errors, named here
        free = shutil.disk_usage(tmp).free
        raise ArtifactError(
            f"int8 quantisation failed in {tmp.parent} ({free / 1e6:.1f} MB free): "
            f"{type(e).__name__}: {e}"
        ) from e
    finally:
        logging.getLogger().removeFilter(advice)
    q.replace(fp32)  # the artifact serves the quantised graph as model.onnx
    record_checksums(metadata, tmp)
    write_metadata(tmp, metadata)
    return size_fp32
