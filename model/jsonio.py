"""Reading JSON the same way everywhere: a file's JSON with the file named where it is not
JSON, and objects that give no key twice (``json.loads`` keeps the last value without a
word). The training readers and the file scorer (``absa predict --input``) refuse a key
given twice alike; run directories and artifacts name their files. No torch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["DuplicateKey", "given_twice", "read_json", "unique_keys"]


class DuplicateKey(ValueError):
    """A JSON object gives one key twice; the message names the key."""


def given_twice(key: str) -> str:
    """What is wrong with an object that gives ``key`` twice, said one way everywhere."""
    return f"the key {key!r} is given twice in one object"


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's pairs as a dict (``json.loads``'s ``object_pairs_hook``); a key given
    twice raises ``DuplicateKey``."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(given_twice(key))
        out[key] = value
    return out


def read_json(path: Path | str) -> object:
    """A file's JSON; ValueError naming the file where it is not JSON or not UTF-8 (a torn
    or foreign file: the parser's own message names no file). A missing file is the
    OSError it is (which names it)."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not JSON ({e})") from None
    except RecursionError:
        raise ValueError(f"{path}: not JSON (nested too deeply to read)") from None
