"""The documented subsets of the JSON Schema ``format`` DFAs: valid JSON-Schema-Test-Suite
instances the DFAs knowingly reject, each with its reason (the subsets are explained in
test_json_schema_formats.py's docstring and docs/json_schema.md)."""

from __future__ import annotations


# Valid suite instances we knowingly reject (test_json_schema_formats.py's docstring explains
# each subset).
ALLOWED_REJECTIONS: list[tuple[str, object, str]] = [
    # Punycode and IDNA2008 validity of A-labels is not practical in a DFA: every "xn--"
    # label (any case) is rejected; other labels with "--" in positions 3-4 are accepted.
    ("hostname", lambda s: any(label[:4].lower() == "xn--" for label in s.split(".")), "A-label (xn--)"),
    # The regex subset stays inside what ECMA-262 (with and without the u flag) and Python's
    # re (jsonschema's checker) both accept, and is regular (no back-references).
    ("regex", "(?<name>x)", "named group: not Python syntax"),
    ("regex", "(?<n>a)\\k<n>", "named group and back-reference"),
    ("regex", "(?<=a+)b", "lookbehind (variable width: not Python)"),
    ("regex", "[]", "empty class: not Python syntax"),
    ("regex", "[^]", "negated empty class: not Python syntax"),
    ("regex", "\\cA", "control escape: not Python syntax"),
]


def allowance(fmt: str, instance: str) -> int | None:
    """Index of the allow-list entry covering a rejected valid instance, if any."""
    for index, (name, rule, _) in enumerate(ALLOWED_REJECTIONS):
        if name == fmt and (rule(instance) if callable(rule) else rule == instance):
            return index
    return None
