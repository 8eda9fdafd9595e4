"""The two paths a file scoring run is given: checked before the first row is read (a missing
input, an output that is a directory or in one that does not exist, an input compressed or
not JSONL though named so), the output written to ``OUTPUT.<random>.part`` beside it, of
this run alone, and moved into place whole at the end (``absa.scoring``, ``absa.bulk``)."""

from __future__ import annotations

import codecs
import contextlib
import logging
import os
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path

from absa.errors import cannot_write
from absa.model.atomic import fsync_dir

log = logging.getLogger(__name__)

#: the longest file name, in bytes, where the file system does not say (NAME_MAX on Linux)
NAME_MAX = 255


def file_format(path: Path) -> str:
    """``path``'s format by its suffix: jsonl, csv or parquet; ValueError for another."""
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json"):
        return "jsonl"
    if suffix == ".csv":
        return "csv"
    if suffix == ".parquet":
        return "parquet"
    raise ValueError(f"{path}: use a .jsonl, .csv or .parquet file")


def check_paths(src: Path, dst: Path) -> None:
    """Refuse, before a row is read, what would otherwise fail only after the whole input was
    scored (the output goes to a ``.part`` beside ``dst``, moved onto it at the end) or
    fail naming that ``.part`` file: a missing input, an output that is a directory or whose
    directory does not exist, an output that is the input. Each message names the path as
    given."""
    if not src.exists():
        raise ValueError(f"{src}: no such file")
    if src.is_dir():
        raise ValueError(f"{src}: is a directory, not a file to score")
    if not src.is_file():  # checked (a byte-order mark, the header) before it is read whole
        raise ValueError(
            f"{src}: not a regular file (a named pipe or a device): write it to a file first"
        )
    if dst.is_dir():
        raise ValueError(f"{dst}: is a directory; give the path of the file to write")
    if dst.exists() and not dst.is_file():  # replaced by a file, a pipe's reader waits on
        raise ValueError(
            f"{dst}: not a regular file (a named pipe or a device); give a file to write"
        )
    if not dst.parent.is_dir():
        raise ValueError(f"{dst}: no such directory {dst.parent}")
    if dst.exists() and os.path.samefile(src, dst):  # the file, not its name: a hard link,
        # a bind mount, another case of the name where the file system ignores case
        raise ValueError(f"{dst}: the output would replace the input; write to another file")
    packed = _compressed(src) if src.suffix.lower() in (".jsonl", ".json", ".csv") else None
    if packed:  # read as text, every line would be a bad row (or the header unreadable)
        raise ValueError(f"{src}: compressed ({packed}); decompress it first")
    if src.suffix.lower() in (".jsonl", ".json") and _starts_an_array(src):
        # read as JSONL, each line of an indented array would be a bad row
        raise ValueError(f"{src}: a JSON array; write one JSON object per line (JSONL)")
    if src.suffix.lower() in (".jsonl", ".json") and _pretty_object(src):
        raise ValueError(
            f"{src}: a JSON object over several lines (pretty-printed); write one JSON object "
            "per line (JSONL)"
        )
    if src.suffix.lower() in (".jsonl", ".json") and _wide_bom(src):
        # read as UTF-8, every line would be a bad row (a CSV's header is refused so)
        raise ValueError(
            f"{src}: UTF-16 or UTF-32 text (its byte-order mark says so); write it as UTF-8"
        )


@contextlib.contextmanager
def new_part(dst: Path) -> Iterator[Path]:
    """``part_path(dst)``, made now (empty), before a row is scored, and removed if the block
    fails or is stopped (Ctrl-C, SIGTERM, SIGHUP). One that cannot be made (a directory not
    writable; before ``part_path`` fitted the name limit, a name too long with the suffix)
    failed after the first rows were scored, or the whole of a small file, naming the
    ``.part`` the user never gave. Made inside the scope that removes it: made first and
    removed in the caller's own ``try``, a signal between the two left it behind."""
    tmp = part_path(written_at(dst))
    mine = True
    try:
        try:
            tmp.touch(exist_ok=False)
        except OSError as e:
            mine = not isinstance(e, FileExistsError)  # another run's: never removed
            raise cannot_write(dst, e) from None
        yield tmp
    except BaseException:
        if mine:
            tmp.unlink(missing_ok=True)  # a failed move too: no .part is left behind
        raise


def written_at(dst: Path) -> Path:
    """The file an output path names: itself, or, for a symbolic link, the file it points to
    (replaced there, the link kept, as an editor saves through one; the ``.part`` beside
    that file, on its file system, for the rename)."""
    return Path(os.path.realpath(dst)) if dst.is_symlink() else dst


def publish(tmp: Path, dst: Path) -> None:
    """Move a finished ``.part`` into place for good: its data reach the disk before the
    rename, and the rename before the command ends (the file, then its directory, fsynced).
    Renamed alone, a power cut could leave ``dst`` empty or short where the run had said
    it was whole. The directory's sync comes after the rename: one that fails (an I/O error;
    a file system that does not sync directories is left at that, ``fsync_dir``) is a
    warning, not the run's failure, as the output is in place by then."""
    target = written_at(dst)
    with contextlib.suppress(FileNotFoundError):  # an output replaced keeps its permissions
        os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    tmp.replace(target)  # the output appears whole or not at all
    try:
        fsync_dir(target.parent)
    except OSError as e:
        log.warning(
            "%s: written, but its directory could not be synced (%s): a power cut now "
            "could still lose the rename",
            dst,
            e.strerror or e,
        )


def part_path(dst: Path) -> Path:
    """Where a run writes ``dst`` before moving it into place: ``DST.<random>.part`` beside
    it, of this run alone. One ``DST.part`` for every run let a second run onto the same
    output truncate and write into the first one's file, which the first then moved into
    place: the output held rows of both. Where the whole would be longer than the file
    system takes (``name_max``), the output's name is cut short, at a character boundary:
    an output named within 18 bytes of the limit, valid by itself, could not be written."""
    return beside(dst, "", f".{uuid.uuid4().hex[:12]}.part")


def beside(dst: Path, before: str, after: str) -> Path:
    """``before + dst.name + after`` in ``dst``'s directory, the name cut short (at a
    character boundary) where the whole would be over the file system's limit
    (``name_max``): a temporary beside an output named near the limit."""
    room = max(name_max(dst.parent) - len(os.fsencode(before + after)), 0)
    name = os.fsencode(dst.name)
    if len(name) > room:
        cut = room
        while cut and (name[cut] & 0xC0) == 0x80:  # a UTF-8 continuation byte: not cut inside
            cut -= 1
        name = name[:cut]
    return dst.with_name(before + os.fsdecode(name) + after)


def name_max(directory: Path) -> int:
    """The longest file name, in bytes, that ``directory``'s file system takes."""
    try:
        limit = os.pathconf(directory, "PC_NAME_MAX")
    except (AttributeError, OSError, ValueError):  # no pathconf (Windows), or no answer
        return NAME_MAX
    return limit if limit > 0 else NAME_MAX  # -1: no limit given


def check_files(src: Path, dst: Path) -> None:
    """Everything ``score_file`` refuses about its two paths, without a model: an unknown
    suffix on either, a Parquet file without pyarrow (the parquet extra: main() names it),
    then ``check_paths``."""
    if "parquet" in (file_format(src), file_format(dst)):
        import pyarrow  # noqa: F401
    check_paths(src, dst)


def _wide_bom(path: Path) -> bool:
    """Whether ``path`` opens with a UTF-16 or UTF-32 byte-order mark (PowerShell's ``>``
    writes UTF-16)."""
    with path.open("rb") as f:
        head = f.read(4)
    marks = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF32_BE)  # UTF-32-LE: 16-LE's
    return head.startswith(marks)


#: the first bytes of the compressed files a text reader would read as bad rows
_MAGIC = {b"\x1f\x8b": "gzip", b"PK\x03\x04": "zip", b"BZh": "bzip2", b"\xfd7zXZ\x00": "xz",
          b"\x28\xb5\x2f\xfd": "zstd"}  # fmt: skip


def _compressed(path: Path) -> str | None:
    """The compression ``path`` is in, by its first bytes, else None."""
    with path.open("rb") as f:
        head = f.read(8)
    return next((name for magic, name in _MAGIC.items() if head.startswith(magic)), None)


def _pretty_object(path: Path) -> bool:
    """Whether ``path``'s first line is a lone "{": one JSON object written over several
    lines (json.dump with indent), each of whose lines would be a bad row."""
    with path.open("rb") as f:
        head = f.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    return head.split(b"\n", 1)[0].strip() == b"{"


def _starts_an_array(path: Path) -> bool:
    with path.open("rb") as f:
        head = f.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    return head.startswith(b"[")
