"""Python types as schemas (pydantic models, dataclasses, TypedDicts) and parse-back.

Oracles: pydantic itself. Instances pydantic serializes must be accepted by the grammar,
and every text a random walk through the grammar's masks produces must validate, with
``parse_as``, into the type (and against the schema with the jsonschema package).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
from typing import Literal, Optional

from typing_extensions import TypedDict  # pydantic needs it below Python 3.12

import jsonschema
import pydantic
import pytest

import gramalign as ga
from gramalign.grammar.json_schema.types import is_schema_type, schema_of_type
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.parsing import IncrementalParser

from support.grammar_walks import random_texts


class Genre(enum.Enum):
    FICTION = "fiction"
    SCIENCE = "science"
    HISTORY = "history"


class Author(pydantic.BaseModel):
    name: str = pydantic.Field(min_length=1, max_length=30)
    born: Optional[int] = pydantic.Field(default=None, ge=1000, le=2025)


class Book(pydantic.BaseModel):
    title: str = pydantic.Field(max_length=40)
    genre: Genre
    authors: list[Author] = pydantic.Field(min_length=1, max_length=3)
    published: datetime.date
    rating: float = pydantic.Field(ge=0, le=5)
    format: Literal["paperback", "hardcover", "ebook"] = "paperback"
    isbn: str = pydantic.Field(pattern=r"^97[89]-\d{10}$")


@dataclasses.dataclass
class Point:
    x: int
    y: int
    label: Optional[str] = None


class Movie(TypedDict):
    title: str
    year: int
    cast: list[str]


BOOK = Book(title="Dune", genre=Genre.FICTION, authors=[Author(name="Frank Herbert", born=1920)],
            published=datetime.date(1965, 8, 1), rating=4.5, format="hardcover", isbn="978-0441172719")


def _accepts(grammar: ga.Grammar, text: str) -> bool:
    return IncrementalParser(build_parser_tables(grammar)).accepts(text.encode("utf-8"))


def test_is_schema_type_tells_types_from_schemas():
    assert is_schema_type(Book) and is_schema_type(Point) and is_schema_type(list[int]) and is_schema_type(Movie)
    assert not any(is_schema_type(s) for s in ({"type": "object"}, True, '{"type": "null"}', b"{}"))


@pytest.mark.parametrize("tp,value", [
    (Book, BOOK),
    (Point, Point(1, -2, "origin")),
    (Movie, Movie(title="Alien", year=1979, cast=["Sigourney Weaver"])),
    (list[Point], [Point(0, 0), Point(3, 4, None)]),
])
def test_pydantic_serializations_are_accepted_and_parse_back(tp, value):
    adapter = pydantic.TypeAdapter(tp)
    text = adapter.dump_json(value).decode()
    grammar = ga.Grammar.from_json_schema(tp)
    assert _accepts(grammar, text), text
    assert ga.parse_as(tp, text) == value


@pytest.mark.parametrize("tp", [Book, Point, Movie, list[Point]])
def test_every_walk_through_the_masks_parses_into_the_type(tp):
    grammar = ga.Grammar.from_json_schema(tp)
    validator = jsonschema.Draft202012Validator(schema_of_type(tp), format_checker=jsonschema.FormatChecker())
    texts = random_texts(grammar, 40, seed=7, max_bytes=1500)
    assert len(texts) >= 20
    for text in texts:
        validator.validate(json.loads(text))
        ga.parse_as(tp, text)  # raises pydantic.ValidationError if the grammar let something through


def test_invalid_instances_are_rejected():
    grammar = ga.Grammar.from_json_schema(Book)
    good = json.loads(BOOK.model_dump_json())
    for key, bad_value in [("rating", 5.5), ("genre", "poetry"), ("isbn", "979-123"), ("published", "1965-13-01"),
                           ("authors", []), ("format", "scroll")]:
        broken = {**good, key: bad_value}
        assert not _accepts(grammar, json.dumps(broken, separators=(",", ":"))), key
    missing = {k: v for k, v in good.items() if k != "title"}
    assert not _accepts(grammar, json.dumps(missing, separators=(",", ":")))


def test_parse_as_raises_on_text_outside_the_type():
    with pytest.raises(pydantic.ValidationError):
        ga.parse_as(Point, '{"x": 1}')
