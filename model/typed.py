"""Config values checked against their dataclass field's type, strictly, with a message that
names where the value came from (a --config file's key, a run's own model_config.json)."""

from __future__ import annotations

import typing
from typing import Any, TypeVar, overload

from pydantic import TypeAdapter, ValidationError

_T = TypeVar("_T")


@overload
def typed_value(hint: type[_T], value: object, where: str) -> _T: ...
@overload
def typed_value(hint: Any, value: object, where: str) -> Any: ...  # a hint read at run time


def typed_value(hint: Any, value: object, where: str) -> Any:
    """``value`` checked against a config field's type, strictly (a string is not a number, a
    bool not an integer; an integer is a float), JSON's lists taken as tuples; ValueError
    naming ``where`` otherwise."""
    try:
        return TypeAdapter(hint).validate_python(_tuples(value), strict=True)
    except ValidationError as e:
        first = e.errors()[0]
        raise ValueError(f"{where}: {first['msg'].lower()}, not {value!r}") from None


def typed_fields(cls: type, values: dict, where: str) -> dict[str, Any]:
    """Each of ``values`` checked by ``typed_value`` against ``cls``'s field of that name
    (the caller has refused unknown keys), the message naming ``where: key``."""
    hints = typing.get_type_hints(cls)
    return {k: typed_value(hints[k], v, f"{where}{k}") for k, v in values.items()}


def _tuples(value: object) -> object:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value
