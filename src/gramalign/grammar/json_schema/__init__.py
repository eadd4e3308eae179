"""JSON Schema to grammar: exact, or a clear error naming the keyword and JSON pointer.

``compile_json_schema(schema)`` resolves references (:mod:`.resolve`), evaluates each
value reference into a typed :class:`~.shapes.Shape` (:mod:`.evaluate`) and emits a
deterministic grammar (:mod:`.emit`) whose leaves are exact automata for strings
(:mod:`.strings`, :mod:`.ecma_regex`, :mod:`.formats`) and numbers (:mod:`.numbers`).
"""

from __future__ import annotations

import json

from ...errors import SchemaCompileError
from ..automata import MAX_STATES
from ..dfa import StateLimitError
from ..grammar import Grammar
from .emit import Emitter, Layout
from .evaluate import Evaluator
from .resolve import SchemaIndex, draft_of
from .types import is_schema_type, schema_of_type

__all__ = ["compile_json_schema"]

WHITESPACE_MODES = ("compact", "flexible")
MAX_SCHEMA_BYTES = 16 << 20


def compile_json_schema(schema, *, whitespace: str = "compact", max_whitespace: int = 8,
                        string_escapes: str = "minimal", property_order: str = "schema", integer_fraction: bool = False,
                        approximate=(), max_states: int = MAX_STATES) -> Grammar:
    """See :meth:`Grammar.from_json_schema`."""
    if is_schema_type(schema):
        schema = schema_of_type(schema)
    if isinstance(schema, (str, bytes)):
        if len(schema) > MAX_SCHEMA_BYTES:
            raise SchemaCompileError(f"the schema is larger than {MAX_SCHEMA_BYTES >> 20} MiB")
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as exc:
            raise SchemaCompileError(f"the schema is not valid JSON: {exc}") from None
    if not isinstance(schema, (dict, bool)):
        raise SchemaCompileError(f"a schema must be an object or a boolean, not {type(schema).__name__}")
    if whitespace not in WHITESPACE_MODES:
        raise ValueError(f"whitespace must be one of {WHITESPACE_MODES}, not {whitespace!r}")
    if not isinstance(max_whitespace, int) or max_whitespace < 1:
        raise ValueError("max_whitespace must be a positive integer")
    approximate = frozenset([approximate] if isinstance(approximate, str) else approximate)
    index = SchemaIndex(schema, draft_of(schema))
    evaluator = Evaluator(index, max_states=max_states, approximate=approximate)
    if string_escapes not in ("minimal", "all"):
        raise ValueError(f"string_escapes must be 'minimal' or 'all', not {string_escapes!r}")
    if property_order not in ("schema", "any"):
        raise ValueError(f"property_order must be 'schema' or 'any', not {property_order!r}")
    layout = Layout(max_whitespace if whitespace == "flexible" else None, string_escapes, property_order,
                    integer_fraction)
    source = json.dumps(schema, sort_keys=True)
    try:
        grammar = Emitter(evaluator, layout, frozenset([""]), max_states=max_states).grammar(source)
    except StateLimitError as exc:
        raise SchemaCompileError(f"an automaton for this schema is too large: {exc}") from None
    except RecursionError:
        raise SchemaCompileError("the schema nests too deeply") from None
    return Grammar(grammar.terminals, grammar.rules, grammar.start, source=source, strict=True)
