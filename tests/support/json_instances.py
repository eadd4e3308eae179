"""Helpers over JSON instances (decoded values) for the JSON Schema tests: the same value with
every object's members reversed, and whether a value holds an integral float."""

from __future__ import annotations


def reversed_keys(value):
    """``value`` with every object's members in reverse order (for property_order='any')."""
    if isinstance(value, dict):
        return {key: reversed_keys(value[key]) for key in reversed(value)}
    if isinstance(value, list):
        return [reversed_keys(item) for item in value]
    return value


def has_integral_float(value) -> bool:
    """Whether ``value`` holds a float like 1.0, which ``integer`` rejects unless integer_fraction=True."""
    if isinstance(value, float):
        return value.is_integer()
    if isinstance(value, dict):
        value = list(value.values())
    return isinstance(value, list) and any(map(has_integral_float, value))
