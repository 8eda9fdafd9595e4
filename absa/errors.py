"""The project's error types. The core raises these and never speaks HTTP: the service maps
them to status codes in one place (``absa.service.errors``), the CLI to one line and exit 2.

    AbsaError
    ├── InputError          the caller's input is wrong (HTTP 422)
    │   ├── LimitError      ... or over a size limit (HTTP 413)
    │   ├── TextError       a text / span the pipeline cannot encode (absa.model.text)
    │   └── DataError       a bad training or evaluation file, naming file and line
    ├── ArtifactError       a model directory is missing, incomplete or fails verification
    │   ├── TransientRefusal  ... refused for want of memory: a retry may load it (HTTP 503)
    │   └── ParityError     onnxruntime and torch disagree on an export
    ├── RegistryError       the model registry refuses (no such version, locked, ...)
    ├── Overloaded          too much work waiting: try again later (HTTP 503 + Retry-After)
    └── ShuttingDown        the service no longer takes work (HTTP 503)

``InputError`` is also a ``ValueError`` and ``ArtifactError`` a ``RuntimeError``, so code that
catches the builtin kinds keeps working. ``transient`` says whether an error came of an I/O
error a retry may not meet (the CLI's exit 75).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

#: OSError numbers a retry may not meet: the network file system or the volume, not the input
TRANSIENT = frozenset(
    getattr(errno, name)
    for name in (
        "ESTALE",
        "EIO",
        "ETIMEDOUT",
        "EAGAIN",
        "EBUSY",
        "ECONNRESET",
        "ENETDOWN",
        "ENETUNREACH",
        "EHOSTUNREACH",
        "ENOLCK",
        "EREMOTEIO",
    )
    if hasattr(errno, name)
)


def chain(e: BaseException, implicit: bool = False) -> Iterator[BaseException]:
    """``e`` and the errors it was raised from (``__cause__``; with ``implicit``, also the
    one being handled when it was raised, ``__context__``), each once."""
    seen: set[int] = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        yield cur
        seen.add(id(cur))
        cur = cur.__cause__ or (cur.__context__ if implicit else None)


def transient(e: BaseException) -> bool:
    """An OSError of ``TRANSIENT``, or an error raised from one (``raise DataError(...) from
    e``: a data file, the registry's pointer or a report that could not be read or written,
    named). Only an explicit cause counts: ``from None`` says the OSError is not the matter
    (a registry locked by another job is EAGAIN, and no retry)."""
    return any(isinstance(c, OSError) and c.errno in TRANSIENT for c in chain(e))


def no_room(e: BaseException) -> bool:
    """An OSError of ``NO_SPACE`` (a full disk, a used-up quota), or an error raised from one."""
    return any(isinstance(c, OSError) and c.errno in NO_SPACE for c in chain(e))


class AbsaError(Exception):
    """Base of every error the project raises on purpose."""


class InputError(AbsaError, ValueError):
    """The input is invalid: the message says what is wrong and where."""


class LimitError(InputError):
    """The input is over a configured size limit (text length, aspects, items)."""


class DataError(InputError):
    """Bad input data. The message names the file and the line or record."""


class ArtifactError(AbsaError, RuntimeError):
    """The model directory is missing, incomplete, or fails verification."""


class TransientRefusal(ArtifactError):
    """A model refused for want of a resource (memory, file descriptors) while loading: the
    same model may load at the next try (a 503 to retry, not a 409)."""


class ParityError(ArtifactError):
    """onnxruntime and torch disagree on the exported model."""


class RegistryError(AbsaError, RuntimeError):
    """The model registry cannot do what was asked."""


class Overloaded(AbsaError):
    """Too much work is waiting; the caller should retry later."""


class ShuttingDown(AbsaError):
    """The service no longer takes work."""


#: OSError numbers of a write that found no room: the disk is full, the user's quota is used
#: up (no EDQUOT on Windows), or the file is over a size limit (EFBIG: ``ulimit -f``, or the
#: file system's largest file)
NO_SPACE = frozenset(getattr(errno, n) for n in ("ENOSPC", "EDQUOT", "EFBIG") if hasattr(errno, n))


def cannot_write(dst: Path | str, e: OSError) -> OSError:
    """``e``, met writing ``dst`` (a ``.part`` of it, a folder being built for it), as one
    line naming ``dst`` (the path the user gave), its errno kept: "cannot write DST: WHY".
    Where there was no room (``NO_SPACE``) it says the disk is full (or the quota used
    up, or the file over a size limit): Python said only "[Errno 28] No space left on
    device", pyarrow "Error writing bytes to file. Detail: [errno 28] ...", neither naming a
    file."""
    if e.errno == errno.EFBIG:
        why = f"the file is over a size limit ({os.strerror(e.errno)}: ulimit -f?)"
    elif e.errno is not None and e.errno in NO_SPACE:  # the disk is full, or the quota used up
        quota = e.errno == getattr(errno, "EDQUOT", None)
        room = "the disk quota is used up" if quota else "the disk is full"
        why = f"{room} ({os.strerror(e.errno)})"
    else:
        why = e.strerror or str(e)
    # one argument: str() is the message alone, without "[Errno N]" before it
    err = OSError(f"cannot write {dst}: {why}")
    err.errno = e.errno
    return err


def raise_if_full(dst: Path, e: OSError) -> None:
    """``e`` raised as ``cannot_write`` says it where there was no room (``NO_SPACE``);
    else nothing, for the caller to re-raise ``e`` as it is."""
    if e.errno in NO_SPACE:
        raise cannot_write(dst, e) from e


#: the extras that bring torch, whose PyPI wheel on Linux is the CUDA build (several GB)
TORCH_EXTRAS = ("train", "dev")


def install_hint(extra: str) -> str:
    """How to install absa's ``extra``: from absa's checkout (absa is not installed from
    PyPI, where another project's package has its name); torch's CPU build where it brings
    torch."""
    cpu = (
        " (on Linux with --extra-index-url https://download.pytorch.org/whl/cpu: PyPI's torch "
        "there is the CUDA build, several GB)"
        if extra in TORCH_EXTRAS
        else ""
    )
    return f"pip install '.[{extra}]' in absa's checkout{cpu}"


def first_few(names: list[str], n: int = 3) -> str:
    """Names for a message: the first ``n``, and how many more ("a, b, c and 4 more")."""
    return ", ".join(names[:n]) + (f" and {len(names) - n} more" if len(names) > n else "")
