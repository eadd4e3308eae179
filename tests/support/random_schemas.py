"""Seeded generators of random JSON Schemas and of candidate instances near them, and the
output form the instances are written in.

:class:`SchemaGenerator` writes small draft 2020-12 schemas over the keywords the compiler
claims to handle exactly (docs/json_schema.md), nested ``MAX_SCHEMA_DEPTH`` levels deep at
most, with object members in one unambiguous schema order (:func:`_anchor_key_order`).
:class:`InstanceGenerator` writes values near a schema and mutations of them, valid or not.
:func:`serialize` writes a value in the output form the grammar promises to accept in full
(docs/json_schema.md, "Output form"); :func:`other_spellings` writes it outside that form.
test_json_schema_random.py explains the choices against the ``jsonschema`` oracle; the
unevaluated-keyword tests and the fuzzer (support/fuzz_cases.py, support/fuzz_run.py) use the
same generators.
"""

from __future__ import annotations

import contextlib
import copy
import json
import random
import re
from decimal import Decimal

from support.json_instances import reversed_keys

MAX_SCHEMA_DEPTH = 3  # subschema nesting below the root
MAX_INSTANCE_DEPTH = 5  # recursive definitions: sampled values stop growing here

# Named properties: every ``properties`` lists these in this order (the serialization order).
PROPERTY_NAMES = ("a", "b", "c")
# Keys no schema names: extra keys, written after the named ones. "ab" matches "^[a-c]+$",
# "x1" matches "^x" and "[0-9]", so patternProperties see both named and extra keys; 'x"'
# and "é" need an escape or a multi-byte character in the key.
EXTRA_NAMES = ("ab", "x", "x1", "y", 'x"', "\u00e9")
KEY_PATTERNS = ("^x", "^[a-c]+$", "[0-9]", "b", "^y$")

# String patterns (ECMA and Python agree on them for strings without \n, \r) and strings
# each of them matches, so that near instances often satisfy the pattern.
PATTERNS = {
    "^[a-c]+$": ("a", "cab", "bbb"),
    "b": ("b", "abc", "xbx"),
    "^x": ("x", "xyz", "xb"),
    "c$": ("c", "abc", "\u00e9c"),
    "^(ab|c)*$": ("", "abc", "cab"),
    "^a.?$": ("a", "ab", "a\U0001f600"),
    "[0-9]": ("1", "a2"),
    "^[^a]*$": ("", "bc", "\u00e9\"\\"),
}
# String characters: JSON escapes (quote, backslash, tab, a \u0001 control character),
# two-byte and four-byte UTF-8.
ALPHABET = "abcxy1 \"\\\u00e9\U0001f600\t\x01"

BOUNDS = (-3, -1, 0, 1, 2, 5, 10, Decimal("-1.5"), Decimal("0.5"), Decimal("2.25"), Decimal("3.5"))
MULTIPLES = (2, 3, 5, Decimal("0.5"))


def _json_number(value: Decimal | int, as_float: bool = False):
    """``value`` as the Python number ``json.loads`` would give for its exponent-free spelling."""
    value = Decimal(value)
    if abs(value) >= 10 ** 15:  # as a float it would repr with an exponent: keep an int
        return int(value.to_integral_value())
    if value == value.to_integral_value() and not as_float:
        return int(value)
    result = float(value)
    assert "e" not in repr(result), value  # the generator keeps magnitudes where repr has no exponent
    return result


def _as_decimal(number) -> Decimal:
    return Decimal(repr(number)) if isinstance(number, float) else Decimal(number)


# ---------------------------------------------------------------------------- schemas


class SchemaGenerator:
    """Random draft 2020-12 schemas; ``schema()`` returns a root with optional ``$defs``."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.defs: list[str] = []
        self.complemented = False  # inside a not, an if or a oneOf branch

    def schema(self) -> dict:
        rng = self.rng
        self.defs = []
        defs = {}
        if rng.random() < 0.35:
            # defined first so that the body can refer to them
            # "leaf" may refer to "node" but not to itself: a bare self-reference is a cycle
            # that never reaches a value (the validator recurses forever on it)
            self.defs = ["node"]
            defs["leaf"] = self.node(2)
            self.defs = ["node", "leaf"]
            defs["node"] = self.recursive_definition()
        root = self.node(0, allow_bool=False)
        if defs:
            root = {**root, "$defs": defs}
        return root

    def recursive_definition(self) -> dict:
        """A definition that refers to itself through an object property or array items."""
        rng = self.rng
        if rng.random() < 0.6:
            properties = {"a": self.node(2) if rng.random() < 0.7 else {"$ref": "#/$defs/leaf"},
                          "b": {"$ref": "#/$defs/node"},
                          "c": rng.choice([True, {"type": "integer"}, {"$ref": "#/$defs/node"}])}
            node = {"type": rng.choice(["object", ["object", "null"]]), "properties": properties}
            if rng.random() < 0.5:
                node["required"] = ["a"]
            if rng.random() < 0.3:
                node["additionalProperties"] = False
            return node
        node = {"type": ["array", rng.choice(["integer", "string", "null"])],
                "items": {"$ref": "#/$defs/node"}}
        if rng.random() < 0.6:
            node["maxItems"] = rng.randint(1, 3)
        if rng.random() < 0.3:
            node["minItems"] = 1
        return node

    def node(self, depth: int, allow_bool: bool = True):
        rng = self.rng
        if allow_bool and depth > 0 and rng.random() < 0.06:
            return rng.random() < 0.7  # mostly true: false makes many parents unsatisfiable
        leaf_only = depth >= MAX_SCHEMA_DEPTH
        kinds = ["scalar"] * 6 + ["enum", "const", "shallow"]
        if not leaf_only:
            kinds += ["object"] * 4 + ["array"] * 2 + ["anyOf", "oneOf", "allOf", "not", "if", "typed_union"]
            kinds += ["family"] * 3
        if self.defs:
            kinds += ["ref"]
        kind = rng.choice(kinds)
        node = getattr(self, "_" + kind)(depth)
        if not leaf_only and kind in ("scalar", "object", "array") and rng.random() < 0.2:
            # a combinator next to other keywords: both apply
            node.update(self._combinator(depth, rng.choice(["anyOf", "oneOf", "allOf", "not", "if"])))
        return _anchor_key_order(node)

    # ----- leaves

    def _scalar(self, depth: int) -> dict:
        kind = self.rng.choice(["null", "boolean", "integer", "number", "string", "string"])
        if kind in ("integer", "number"):
            return {"type": kind, **self.number_keywords()}
        if kind == "string":
            return {"type": "string", **self.string_keywords()}
        return {"type": kind}

    def number_keywords(self) -> dict:
        rng = self.rng
        node = {}
        low = rng.choice(BOUNDS)
        high = low + rng.choice([0, Decimal("0.5"), 1, 3, 10])
        if rng.random() < 0.6:
            node[rng.choice(["minimum", "exclusiveMinimum"])] = _json_number(low)
        if rng.random() < 0.6:
            node[rng.choice(["maximum", "exclusiveMaximum"])] = _json_number(high)
        if rng.random() < 0.35:
            node["multipleOf"] = _json_number(rng.choice(MULTIPLES))
        return node

    def string_keywords(self) -> dict:
        rng = self.rng
        node = {}
        if rng.random() < 0.4:
            node["minLength"] = rng.randint(0, 3)
        if rng.random() < 0.4:
            node["maxLength"] = node.get("minLength", 0) + rng.randint(0, 4)
        if rng.random() < 0.4:
            node["pattern"] = rng.choice(list(PATTERNS))
        return node

    def _enum(self, depth: int) -> dict:
        rng = self.rng
        values = [self.constant() for _ in range(rng.randint(1, 4))]
        unique = []
        for value in values:  # jsonschema does not require uniqueness, but duplicates teach nothing
            if not any(_same_json(value, u) for u in unique):
                unique.append(value)
        node = {"enum": unique}
        if rng.random() < 0.3:
            node["type"] = rng.choice(["string", "integer", "object", ["integer", "null"]])
        return node

    def _const(self, depth: int) -> dict:
        return {"const": self.constant()}

    def constant(self, depth: int = 0):
        rng = self.rng
        kind = rng.choice(["null", "bool", "int", "dec", "str", "str"] + (["obj", "arr"] if depth < 2 else []))
        if kind == "null":
            return None
        if kind == "bool":
            return rng.random() < 0.5
        if kind == "int":
            return rng.randint(-3, 12)
        if kind == "dec":
            return _json_number(rng.choice(BOUNDS) + Decimal("0.25"))
        if kind == "str":
            return rng.choice(["", "a", "ab", "x", "b\"", "\u00e9", "1"])
        if kind == "obj":
            names = sorted(rng.sample(PROPERTY_NAMES + EXTRA_NAMES[:2], rng.randint(0, 2)), key=_key_rank)
            return {name: self.constant(depth + 1) for name in names}
        return [self.constant(depth + 1) for _ in range(rng.randint(0, 2))]

    def _shallow(self, depth: int) -> dict:
        """Object or array keywords without subschemas (usable at the deepest level)."""
        rng = self.rng
        if rng.random() < 0.5:
            node = {"type": "object"}
            if rng.random() < 0.5:
                node["minProperties"] = rng.randint(0, 2)
            if rng.random() < 0.5:
                node["maxProperties"] = node.get("minProperties", 0) + rng.randint(0, 2)
            if rng.random() < 0.3:
                node["additionalProperties"] = rng.random() < 0.3
            return node
        node = {"type": "array"}
        if rng.random() < 0.5:
            node["minItems"] = rng.randint(0, 2)
        if rng.random() < 0.5:
            node["maxItems"] = node.get("minItems", 0) + rng.randint(0, 2)
        return node

    def _ref(self, depth: int) -> dict:
        return {"$ref": "#/$defs/" + self.rng.choice(self.defs)}

    # ----- containers

    def _object(self, depth: int) -> dict:
        rng = self.rng
        node = {}
        if rng.random() < 0.8:
            node["type"] = "object" if rng.random() < 0.8 else ["object", "null"]
        if rng.random() < 0.75:
            node["properties"] = {name: self.node(depth + 1) for name in PROPERTY_NAMES if rng.random() < 0.7}
        if rng.random() < 0.5:
            node["required"] = [name for name in PROPERTY_NAMES if rng.random() < 0.4]
        # the compiler refuses complements of objects with patternProperties or
        # additionalProperties (documented), so inside not/if/oneOf they are rarer
        rare = 0.25 if self.complemented else 1
        if rng.random() < 0.3 * rare:
            node["patternProperties"] = {pattern: self.node(depth + 1)
                                         for pattern in rng.sample(KEY_PATTERNS, rng.randint(1, 2))}
        if rng.random() < 0.45 * rare:
            node["additionalProperties"] = (rng.random() < 0.4) if rng.random() < 0.6 else self.node(depth + 1)
        if rng.random() < 0.2:
            node["minProperties"] = rng.randint(1, 3)
        if rng.random() < 0.2:
            node["maxProperties"] = rng.randint(1, 3)
        if rng.random() < 0.2:
            trigger = rng.choice(PROPERTY_NAMES)
            node["dependentRequired"] = {
                trigger: [n for n in PROPERTY_NAMES if n != trigger and rng.random() < 0.6]}
        return node

    def _array(self, depth: int) -> dict:
        rng = self.rng
        node = {}
        if rng.random() < 0.8:
            node["type"] = "array"
        if rng.random() < 0.4:
            node["prefixItems"] = [self.node(depth + 1) for _ in range(rng.randint(1, 2))]
        if rng.random() < 0.7:
            node["items"] = self.node(depth + 1) if rng.random() < 0.8 else rng.random() < 0.5
        if rng.random() < 0.2:
            node["contains"] = self.node(depth + 1)
            if rng.random() < 0.4:
                node["minContains"] = rng.randint(0, 2)
            if rng.random() < 0.4:
                node["maxContains"] = node.get("minContains", 1) + rng.randint(0, 1)
        if rng.random() < 0.4:
            node["minItems"] = rng.randint(0, 2)
        if rng.random() < 0.4:
            node["maxItems"] = node.get("minItems", 0) + rng.randint(0, 2)
        return node

    def _typed_union(self, depth: int) -> dict:
        """A type list with constraints for each of its types in one node."""
        rng = self.rng
        first, second = rng.sample(["integer", "number", "string", "null", "object", "array", "boolean"], 2)
        node = {"type": [first, second]}
        for kind in (first, second):
            if kind in ("integer", "number"):
                node.update(self.number_keywords())
            elif kind == "string":
                node.update(self.string_keywords())
            elif kind == "object":
                node.update({k: v for k, v in self._object(depth).items() if k != "type"})
            elif kind == "array":
                node.update({k: v for k, v in self._array(depth).items() if k != "type"})
        return node

    def _family(self, depth: int) -> dict:
        """A combinator whose branches constrain the same type: independent random branches
        rarely overlap, and overlaps are where oneOf, not and if need complements."""
        rng = self.rng
        kind = rng.choice(["object", "object", "array", "number", "string"])

        def branch():
            if kind == "object":
                return _anchor_key_order(self._object(MAX_SCHEMA_DEPTH - 1))
            if kind == "array":
                return self._array(MAX_SCHEMA_DEPTH - 1)
            if kind == "number":
                return {"type": rng.choice(["number", "integer"]), **self.number_keywords()}
            return {"type": "string", **self.string_keywords()}

        keyword = rng.choice(["anyOf", "oneOf", "oneOf", "allOf", "not", "if"])
        with self.complementing(keyword in ("not", "if", "oneOf")):
            if keyword == "not":
                return {"not": branch()}
            if keyword == "if":
                return {"if": branch(), "then": branch(), "else": branch()}
            return {keyword: [branch() for _ in range(rng.randint(2, 3))]}

    def _anyOf(self, depth: int) -> dict:
        return self._combinator(depth, "anyOf")

    def _oneOf(self, depth: int) -> dict:
        return self._combinator(depth, "oneOf")

    def _allOf(self, depth: int) -> dict:
        return self._combinator(depth, "allOf")

    def _not(self, depth: int) -> dict:
        return self._combinator(depth, "not")

    def _if(self, depth: int) -> dict:
        return self._combinator(depth, "if")

    def _combinator(self, depth: int, keyword: str) -> dict:
        rng = self.rng
        if keyword == "not":
            with self.complementing(True):
                return {"not": self.node(depth + 1)}
        if keyword == "if":
            with self.complementing(True):
                node = {"if": self.node(depth + 1)}
            if rng.random() < 0.8:
                node["then"] = self.node(depth + 1)
            if rng.random() < 0.6 or "then" not in node:
                node["else"] = self.node(depth + 1)
            return node
        with self.complementing(keyword == "oneOf"):  # overlapping oneOf branches are complemented
            return {keyword: [self.node(depth + 1) for _ in range(rng.randint(2, 3))]}

    @contextlib.contextmanager
    def complementing(self, inside: bool):
        """Generate the subschemas of the block as ones the compiler will complement."""
        saved = self.complemented
        self.complemented = saved or inside
        try:
            yield
        finally:
            self.complemented = saved


_NAMING_KEYWORDS = ("properties", "required", "dependentRequired")
_COMPLEMENTING_KEYWORDS = ("not", "if", "oneOf")


def _anchor_key_order(node):
    """Make schema order the pool order for every object ``node`` can produce.

    The compiler orders an object's members by the first ``properties``/``required`` list it
    meets while intersecting a schema's keywords; complements (``not``, ``if``, ``oneOf``)
    and ``dependentRequired`` contribute single names. Once a schema's own ``properties``
    lists every pool name in pool order, it comes first in every such intersection and the
    order is the pool order whatever the combinators add. Properties listed here are
    ``true`` unless the generator gave them a schema, so the language does not change.
    """
    if not isinstance(node, dict):
        return node
    if any(k in node for k in _NAMING_KEYWORDS) or (
            any(k in node for k in _COMPLEMENTING_KEYWORDS) and _may_name_members(node)):
        properties = node.get("properties", {})
        node["properties"] = {name: properties.get(name, True) for name in PROPERTY_NAMES}
        # keep the keyword order readable: properties first, like hand-written schemas
        node = {"properties": node.pop("properties"), **node}
    return node


def _may_name_members(schema) -> bool:
    """Whether objects ``schema`` accepts may get named member positions: it names
    properties, refers to a definition, or has an object among its constants."""
    if isinstance(schema, dict):
        if any(k in schema for k in _NAMING_KEYWORDS + ("$ref",)):
            return True
        constants = [schema["const"]] if "const" in schema else []
        constants += schema.get("enum", [])
        if any(_has_object(c) for c in constants):
            return True
        return any(_may_name_members(v) for k, v in schema.items() if k not in ("const", "enum"))
    if isinstance(schema, list):
        return any(_may_name_members(v) for v in schema)
    return False


def _has_object(value) -> bool:
    if isinstance(value, dict):
        return True
    return isinstance(value, list) and any(map(_has_object, value))


def _key_rank(key: str):
    if key in PROPERTY_NAMES:
        return (0, PROPERTY_NAMES.index(key), key)
    return (1, 0, key)


def _same_json(a, b) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True) and type(a) is type(b)


# ---------------------------------------------------------------------------- instances


class InstanceGenerator:
    """Values near a schema and mutations of them (not necessarily valid: that is the point)."""

    def __init__(self, rng: random.Random, root: dict):
        self.rng = rng
        self.root = root

    def candidates(self, count: int) -> list:
        """``count`` values near the schema, two mutations of each, and a few random values."""
        near = [self.near(self.root, 0) for _ in range(count)]
        mutated = [self.mutate(value) for value in near for _ in range(2)]
        values = near + mutated + [self.any_value(0) for _ in range(count // 4)]
        unique = {}
        for value in values:
            unique.setdefault(serialize(value), value)  # the same text twice teaches nothing
        return list(unique.values())

    # ----- values near a schema

    def near(self, schema, depth: int):
        rng = self.rng
        if depth > MAX_INSTANCE_DEPTH or isinstance(schema, bool) or not schema:
            return self.any_value(depth, small=depth > MAX_INSTANCE_DEPTH)
        sources = [lambda: self.own(schema, depth)] * 2
        if "const" in schema:
            sources += [lambda: copy.deepcopy(schema["const"])] * 2
        if "enum" in schema:
            sources += [lambda: copy.deepcopy(rng.choice(schema["enum"]))] * 2
        if "$ref" in schema:
            target = self.root["$defs"][schema["$ref"].rsplit("/", 1)[1]]
            sources += [lambda: self.near(target, depth + 1)] * 2
        for keyword in ("anyOf", "oneOf", "allOf"):
            for branch in schema.get(keyword, ()):
                sources.append(lambda branch=branch: self.near(branch, depth))
        for keyword in ("if", "then", "else", "not"):
            if keyword in schema:
                sources.append(lambda sub=schema[keyword]: self.near(sub, depth))
        value = rng.choice(sources)()
        if isinstance(value, dict) and rng.random() < 0.4:
            # allOf, if/then and $ref siblings: objects satisfying two parts at once
            parts = list(schema.get("allOf", ())) + [schema[k] for k in ("then", "else", "if") if k in schema]
            if parts:
                other = self.near(rng.choice(parts), depth)
                if isinstance(other, dict):
                    value = {**value, **other}
        return value

    def own(self, schema: dict, depth: int):
        """A value of one of the schema's types, near its bounds."""
        rng = self.rng
        types = schema.get("type")
        if isinstance(types, str):
            types = [types]
        if not types:
            types = []
            if any(k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")):
                types.append("number")
            if any(k in schema for k in ("minLength", "maxLength", "pattern")):
                types.append("string")
            if any(k in schema for k in ("properties", "required", "patternProperties", "additionalProperties",
                                         "minProperties", "maxProperties", "dependentRequired")):
                types.append("object")
            if any(k in schema for k in ("items", "prefixItems", "minItems", "maxItems", "contains")):
                types.append("array")
        if not types:
            return self.any_value(depth)
        kind = rng.choice(types)
        if kind == "null":
            return None
        if kind == "boolean":
            return rng.random() < 0.5
        if kind in ("integer", "number"):
            return self.number(schema, integer=kind == "integer")
        if kind == "string":
            return self.string(schema)
        if kind == "object":
            return self.object(schema, depth)
        return self.array(schema, depth)

    def number(self, schema: dict, integer: bool):
        rng = self.rng
        anchors = [_as_decimal(schema[k]) for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
                   if k in schema] or [Decimal(rng.randint(-5, 15))]
        step = _as_decimal(schema["multipleOf"]) if "multipleOf" in schema else Decimal(1)
        anchor = rng.choice(anchors)
        choice = rng.random()
        if choice < 0.4:
            value = (anchor / step).to_integral_value() * step + rng.choice([-1, 0, 0, 1]) * step
        else:
            value = anchor + rng.choice([-1, Decimal("-0.5"), Decimal("-0.25"), Decimal("-0.01"), 0, 0,
                                         Decimal("0.1"), Decimal("0.5"), 1, 2])
        if integer and rng.random() < 0.8:
            value = value.to_integral_value()
        # sometimes an integral value as a float ("3.0"): an integer from draft 6 on
        return _json_number(value, as_float=rng.random() < 0.1)

    def string(self, schema: dict) -> str:
        rng = self.rng
        lengths = [schema[k] + d for k in ("minLength", "maxLength") if k in schema for d in (-1, 0, 0, 1)]
        if "pattern" in schema and rng.random() < 0.7:
            text = rng.choice(PATTERNS[schema["pattern"]])
        else:
            text = self.random_string(rng.randint(0, 4))
        if lengths and rng.random() < 0.8:
            length = max(0, rng.choice(lengths))
            if len(text) > length:
                text = text[:length] if rng.random() < 0.5 else text[len(text) - length:]
            else:
                pad = rng.choice(["", "a", "b", "c"] + list(text)) or "a"
                text = text + pad * (length - len(text)) if rng.random() < 0.5 else pad * (length - len(text)) + text
        return text

    def random_string(self, length: int) -> str:
        return "".join(self.rng.choice(ALPHABET) for _ in range(length))

    def object(self, schema: dict, depth: int) -> dict:
        rng = self.rng
        properties = schema.get("properties", {})
        required = set(schema.get("required", ()))
        value = {}
        for name in PROPERTY_NAMES:
            if name in required or rng.random() < (0.6 if name in properties else 0.15):
                value[name] = self.near(properties.get(name, True), depth + 1)
        extra_schemas = dict(schema.get("patternProperties", {}))
        additional = schema.get("additionalProperties", True)
        if rng.random() < 0.35 or ("minProperties" in schema and len(value) < schema["minProperties"]):
            for name in rng.sample(EXTRA_NAMES, rng.randint(1, 2)):
                matching = [s for p, s in extra_schemas.items() if _python_search(p, name)]
                value[name] = self.near(rng.choice(matching) if matching else additional, depth + 1)
        return value

    def array(self, schema: dict, depth: int) -> list:
        rng = self.rng
        prefix = schema.get("prefixItems", [])
        lengths = [len(prefix), rng.randint(0, 3)] + [schema[k] + d for k in ("minItems", "maxItems")
                                                      if k in schema for d in (-1, 0, 1)]
        length = max(0, rng.choice(lengths))
        later = [schema.get("items", True)] + ([schema["contains"]] if "contains" in schema else [])
        return [self.near(prefix[i] if i < len(prefix) else rng.choice(later), depth + 1) for i in range(length)]

    def any_value(self, depth: int, small: bool = False):
        """A random JSON value of any type (only scalars when ``small``)."""
        rng = self.rng
        kinds = ["null", "bool", "int", "dec", "str"] + ([] if small or depth > 3 else ["obj", "arr"])
        kind = rng.choice(kinds)
        if kind == "null":
            return None
        if kind == "bool":
            return rng.random() < 0.5
        if kind == "int":
            if rng.random() < 0.1:  # long digit strings against bounds automata
                return rng.choice([10 ** 15, -(10 ** 12) - 7, 123456789012345678901])
            return rng.randint(-5, 15)
        if kind == "dec":
            if rng.random() < 0.1:
                return rng.choice([-0.0, 0.001, -2.0625, 99999.5])
            return _json_number(Decimal(rng.randint(-40, 60)) / 4, as_float=True)
        if kind == "str":
            return self.random_string(rng.randint(0, 4))
        if kind == "obj":
            names = rng.sample(PROPERTY_NAMES + EXTRA_NAMES, rng.randint(0, 3))
            return {name: self.any_value(depth + 1) for name in names}
        return [self.any_value(depth + 1) for _ in range(rng.randint(0, 3))]

    # ----- mutations

    def mutate(self, value):
        """A copy of ``value`` changed at one random place (often from valid to invalid)."""
        value = copy.deepcopy(value)
        rng = self.rng
        # walk down to a random place; the container and key let us replace it there
        parent, key, node = None, None, value
        while isinstance(node, (dict, list)) and node and rng.random() < 0.5:
            parent, key = node, rng.choice(list(node) if isinstance(node, dict) else range(len(node)))
            node = node[key]
        changed = self.mutate_here(node)
        if parent is None:
            return changed
        parent[key] = changed
        return value

    def mutate_here(self, node):
        rng = self.rng
        if rng.random() < 0.15:  # change the type
            return self.any_value(0, small=True)
        if isinstance(node, dict):
            if node and rng.random() < 0.5:
                del node[rng.choice(list(node))]  # a required key dropped, or an optional one
            else:
                node[rng.choice(PROPERTY_NAMES + EXTRA_NAMES)] = self.any_value(2)  # an extra key
            return node
        if isinstance(node, list):
            if node and rng.random() < 0.5:
                node.pop(rng.randrange(len(node)))
            else:
                node.append(copy.deepcopy(rng.choice(node)) if node and rng.random() < 0.5 else self.any_value(2))
            return node
        if isinstance(node, bool) or node is None:
            return self.any_value(0, small=True)
        if isinstance(node, (int, float)):
            bumped = _as_decimal(node) + rng.choice([-1, Decimal("-0.5"), Decimal("0.5"), 1, 3])
            return _json_number(bumped, as_float=isinstance(node, float) and rng.random() < 0.5)
        if rng.random() < 0.6:  # a string lengthened (past maxLength, or a pattern's anchor)
            return node + rng.choice(ALPHABET)
        return node[:-1]


def _python_search(pattern: str, text: str) -> bool:
    return re.search(pattern, text) is not None


# ---------------------------------------------------------------------------- the output form


def canonical(value, plain_integers: bool = True):
    """``value`` in the output form: every object's members in schema order (pool names
    first, then extras) and, with ``plain_integers``, integral floats as ints (``3`` for
    ``3.0``: the grammar writes integers plainly unless ``integer_fraction=True``)."""
    if isinstance(value, dict):
        return {key: canonical(value[key], plain_integers) for key in sorted(value, key=_key_rank)}
    if isinstance(value, list):
        return [canonical(item, plain_integers) for item in value]
    if plain_integers and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def serialize(value, pretty: bool = False, plain_integers: bool = True) -> str:
    value = canonical(value, plain_integers)
    if pretty:
        return json.dumps(value, indent=2, ensure_ascii=False)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def other_spellings(value) -> set[str]:
    """Compact spellings of ``value`` outside the output form: ``3.0`` for an integer,
    members in reverse schema order, ``\\u`` escapes. The grammar may reject them even when
    the value is valid (docs/json_schema.md, "Output form"), but must never accept an
    invalid value in any spelling."""
    form = canonical(value, plain_integers=False)
    compact = {"separators": (",", ":")}
    spellings = {json.dumps(form, ensure_ascii=False, **compact),
                 json.dumps(reversed_keys(form), ensure_ascii=False, **compact),
                 json.dumps(form, ensure_ascii=True, **compact)}
    return spellings - {serialize(value)}
