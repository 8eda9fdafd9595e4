"""Request bodies that give a key twice in one JSON object: ``json.loads`` keeps the last
value without a word, so which was meant no one knows. The body is parsed once, each such
object marked (``Twice``), and refused where it is: the request (422), or a batch item
alone, answered with its own error as a bad item is (``schemas.InvalidItem``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request
from fastapi.responses import Response
from fastapi.routing import APIRoute

from absa.errors import InputError
from absa.model.jsonio import given_twice


class Twice(dict):
    """A JSON object of a request that gave ``key`` twice (``marking_twice``), or a batch item
    holding such an object: refused where it is, a batch item alone."""

    def __init__(self, pairs: Any, key: str) -> None:
        super().__init__(pairs)
        self.key = key


def marking_twice(found: list[Twice]) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    """A ``json.loads`` ``object_pairs_hook``: an object that gives a key twice is a
    ``Twice``, added to ``found`` (``json.loads`` keeps the last value without a word)."""

    def pairs_to_dict(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(pairs)
        if len(out) == len(pairs):
            return out
        seen: set[str] = set()
        for key, _ in pairs:  # the first key given twice
            if key in seen:
                break
            seen.add(key)
        found.append(Twice(out, key))
        return found[-1]

    return pairs_to_dict


def twice_in(value: object) -> str | None:
    """The key of a ``Twice`` object in ``value`` (nested lists and objects; the last in
    the text where there are several), else None; walked only for a body where
    ``marking_twice`` found one."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, Twice):
            return v.key
        if isinstance(v, dict):
            stack += [x for x in v.values() if isinstance(x, dict | list)]
        elif isinstance(v, list):
            stack += [x for x in v if isinstance(x, dict | list)]
    return None


async def marked_json(request: Request, found: list[Twice]) -> Any:
    """The body's JSON, each object that gives a key twice a ``Twice`` (in ``found``). Kept
    where Starlette keeps ``request.json()``'s answer, so FastAPI validates this parse and
    does not read the body again."""
    body = json.loads(await request.body(), object_pairs_hook=marking_twice(found))
    request._json = body  # Starlette's cache of request.json()
    return body


def twice_said(key: str) -> str:
    return f"{given_twice(key)}: send each field once"


def refuse_twice(body: Any, batch: bool) -> None:
    """InputError (422) for a request with an object that gives a key twice (JSON keeps
    the last value without a word: which was meant, no one knows). In a batch, an item
    holding one is marked (a ``Twice``) and answered with its own error, as a bad item is."""
    items = body.get("items") if batch and isinstance(body, dict) else None
    if isinstance(items, list) and not isinstance(body, Twice):
        key = twice_in({k: v for k, v in body.items() if k != "items"})
        if key is None:
            for i, item in enumerate(items):
                marked = twice_in(item)
                if marked is not None:
                    items[i] = Twice(item if isinstance(item, dict) else {}, marked)
            return
        raise InputError(twice_said(key))
    key = twice_in(body)
    if key is not None:
        raise InputError(twice_said(key))


class OneValuePerKey(APIRoute):
    """A route whose JSON body gives no key twice in one object (``/admin/reload``: the
    last ``model_dir`` of two was loaded); the predict routes check it with their limits."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        validated = super().get_route_handler()

        async def handler(request: Request) -> Response:
            found: list[Twice] = []
            try:
                body = await marked_json(request, found)
            except (ValueError, RecursionError):  # FastAPI's parsing says what is wrong
                body = None
            if found:
                refuse_twice(body, batch=False)
            return await validated(request)

        return handler
