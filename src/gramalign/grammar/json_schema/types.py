"""Python types as schemas: pydantic models, dataclasses, TypedDicts, and parsing output back.

pydantic (the optional ``pydantic`` extra) writes the JSON Schema of any type its
``TypeAdapter`` understands; the grammar compiled from that schema only produces texts the
schema validates, so :func:`parse_as` turns every finished generation back into the type.
"""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")


def _pydantic():
    try:
        import pydantic
    except ImportError as error:
        raise ImportError("schemas from Python types need pydantic: pip install 'gramalign[pydantic]'") from error
    return pydantic


def is_schema_type(value: Any) -> bool:
    """True for a type-like value (a class, or a typing construct such as ``list[int]``), not a schema."""
    return not isinstance(value, (dict, bool, str, bytes)) and (isinstance(value, type) or hasattr(value, "__origin__"))


def schema_of_type(tp: Any) -> dict:
    """The JSON Schema pydantic validates ``tp`` against (models, dataclasses, TypedDicts, ``list[int]``...).

    >>> import dataclasses
    >>> @dataclasses.dataclass
    ... class Point:
    ...     x: int
    ...     y: int
    >>> schema_of_type(Point)["required"]
    ['x', 'y']
    """
    pydantic = _pydantic()
    if isinstance(tp, type) and issubclass(tp, pydantic.BaseModel):
        return tp.model_json_schema()
    return pydantic.TypeAdapter(tp).json_schema()


def parse_as(tp: type[T], text: str | bytes) -> T:
    """``text`` (a finished generation) validated by pydantic into an instance of ``tp``.

    >>> parse_as(list[int], "[1,2]")
    [1, 2]
    """
    pydantic = _pydantic()
    if isinstance(tp, type) and issubclass(tp, pydantic.BaseModel):
        return tp.model_validate_json(text)
    return pydantic.TypeAdapter(tp).validate_json(text)
