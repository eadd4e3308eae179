"""Byte DFAs of the JSON Schema ``format`` vocabulary (format-assertion semantics).

:func:`format_dfa` returns a trimmed minimal :class:`~gramalign.grammar.automata.dfa.ByteDFA` over
the UTF-8 encoding of the *decoded* string contents (no JSON quotes, no JSON escapes) that
are valid for a format, following RFC 3339, RFC 5321, RFC 1123, RFC 4291, RFC 3986,
RFC 3987, RFC 6570, RFC 6901, the relative JSON pointer draft, ECMA-262 and the
JSON-Schema-Test-Suite's ``optional/format`` tests for draft2020-12 and draft7. It returns
None for a format name it does not know, which the caller ignores as the specification
says; :data:`UNSUPPORTED_FORMATS` names the standard formats we refuse, so a compiler can
raise a clear error for them instead of silently ignoring them.

The rule every automaton follows: **it never accepts a string the format rejects**. Where
the valid language is regular and reasonably small it is exact; the only valid spellings
rejected are these (each because exactness is not regular or not practical):

* ``hostname`` — a label starting with ``xn--`` (any case: an A-label, RFC 5890 section
  2.3.2.1) is rejected: whether an A-label is valid needs a Punycode decoder and the
  IDNA2008 tables and contextual rules. Otherwise exact: labels of 1-63 letters, digits and
  hyphens not starting or ending with a hyphen, separated by single dots, no trailing dot,
  at most 253 octets in total (about 24k states). Other labels with ``--`` in positions 3-4
  (``ab--cd``, ``co----m``: "reserved" LDH labels that are not A-labels) are accepted: the
  RFC 1123 section 2.1 grammar allows them, RFC 5891 section 4.4 only adds host names that
  Punycode produces (``xn--``), and the suite (draft4/6 ``ab--cd.example``) and the common
  validators accept them. An all-numeric last label (``1.2.3.4``) is accepted, as the RFC
  1123 grammar, the suite and the common validators do; forbidding it would cost some 12k
  more states.
* ``email`` — a conservative reading of RFC 5321 ``Mailbox``: a dot-atom local part or a
  non-empty quoted string (``""`` is rejected), at most 64 octets, then ``@`` and either a
  domain (the ``hostname`` labels above) or an address literal ``[IPv4]`` / ``[IPv6:...]``
  with the IPv6 tag spelled exactly ``IPv6`` and the RFC 5321 IPv6 grammar (``::`` stands
  for at least two groups); the whole address is at most 254 octets (the RFC 5321 path
  limit). General address literals (``[tag:content]``) and the IPv4 octets with leading
  zeros that RFC 5321 ``Snum`` permits are rejected.
* ``time`` / ``date-time`` — exact, including leap seconds: ``:60`` only when the time
  converted to UTC is 23:59:60, i.e. for each of the 1440 local hour-minute pairs exactly
  one ``+hh:mm`` and one ``-hh:mm`` offset (plus ``Z`` for 23:59). Remembering the
  hour-minute pair until the offset is read costs about 11k states.
* ``date`` / ``date-time`` — exact for the years 0001-9999 (Gregorian leap years, days per
  month); the year 0000, which the RFC 3339 grammar allows, is rejected as Python's
  ``datetime`` and jsonschema's checkers reject it.
* ``duration`` — RFC 3339 appendix A; the designators must be upper-case (ABNF literals
  are case-insensitive, ISO 8601 writes them in upper case and validators disagree).
* ``relative-json-pointer`` — ``non-negative-integer ("#" / json-pointer)``; the
  ``+N``/``-N`` index manipulation of draft-bhutton-relative-json-pointer-00 (valid for
  2020-12 only, not for draft7) is rejected.
* ``uri-template`` — RFC 6570 level 4 (with the suite, the apostrophe is a literal); the
  operators ``= , ! @ |``, which the section 2.2 grammar lists but "reserved for future
  extensions" (no level of section 1.2 has them and no expansion is defined for them), are
  rejected, as jsonschema's checker rejects ``= ! @ |``; the suite has no case either way.
* ``regex`` — ECMA-262 patterns are not regular (nested groups), so this is a subset that
  is valid for ``new RegExp(p)`` and ``new RegExp(p, "u")`` alike and for Python's ``re``
  (jsonschema's checker) too, without warnings: any sequence of terms and ``|``. Terms are
  the assertions ``^ $ \\b \\B``; atoms, each optionally quantified: any character except
  ``^ $ \\ . * + ? ( ) [ ] { } |``, ``.``, the escapes ``\\d \\D \\s \\S \\w \\W \\f \\n
  \\r \\t \\v \\xHH \\uHHHH`` and ``\\`` before one of ``^ $ \\ . * + ? ( ) [ ] { } | /``;
  non-empty classes ``[...]``/``[^...]`` of characters other than ``\\ ] [ - ^ |`` (with no
  ``&&`` or ``~~``), the escapes above plus ``\\b \\-``, and ranges whose two ends are both
  digits, both lower-case or both upper-case ASCII letters, in order; groups ``(...)`` and
  ``(?:...)`` (quantifiable) and lookaheads ``(?=...)``, ``(?!...)`` (not quantifiable),
  nested at most 3 deep. Quantifiers: ``* + ? {n} {n,}`` (n = 0..999 without leading zeros)
  and ``{n,m}`` (n one digit, n ≤ m ≤ 999), each optionally lazy. Outside the subset (so
  rejected although valid ECMA-262): back-references, named groups, lookbehind, ``\\c``,
  ``\\0``, ``\\u{...}``, ``\\p{...}``, empty classes ``[]``/``[^]`` and deeper nesting.
* ``uri``, ``uri-reference``, ``iri``, ``iri-reference``, ``ipv4``, ``ipv6``, ``uuid``,
  ``json-pointer`` — exact (RFC 3986 / RFC 3987 ABNF; dotted quads without leading
  zeros; every RFC 4291 text form; 8-4-4-4-12 hex digits of any case).

``idn-hostname`` and ``idn-email`` are refused (:data:`UNSUPPORTED_FORMATS`): their validity
depends on the IDNA2008 tables, bidi and contextual rules.
"""

from __future__ import annotations

import functools

import numpy as np

from ..automata import algebra as automata
from ..automata.dfa import DEAD, ByteDFA, dfa_from_table
from ..automata.regex import regex_to_dfa

__all__ = ["FORMATS", "UNSUPPORTED_FORMATS", "build_format_dfa", "format_dfa"]

_MAX_STATES = 200_000
"""Working bound for intermediate automata (the largest result has about 25k states)."""

# --------------------------------------------------------------------------- shared pieces

_HEX = "[0-9A-Fa-f]"
_DEC_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_IPV4 = rf"{_DEC_OCTET}(?:\.{_DEC_OCTET}){{3}}"
_PCT = f"%{_HEX}{{2}}"
_SUB_DELIMS = "!$&'()*+,;="
_UNRESERVED = r"A-Za-z0-9\-._~"
# RFC 3987 ucschar and iprivate, as the inside of a character class.
_UCSCHAR = (
    r"\u00a0-\ud7ff\uf900-\ufdcf\ufdf0-\uffef"
    + "".join(f"\\U{plane:04x}0000-\\U{plane:04x}fffd" for plane in range(0x1, 0xE))
    + r"\U000e1000-\U000efffd"
)
_IPRIVATE = r"\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd"


def _rx(pattern: str) -> ByteDFA:
    return regex_to_dfa(pattern, max_states=_MAX_STATES)


def _ipv6(min_elided: int = 1) -> str:
    """Regex of the RFC 4291 text forms; ``::`` stands for at least ``min_elided`` groups."""
    h16 = f"{_HEX}{{1,4}}"
    forms = [f"(?:{h16}:){{7}}{h16}", f"(?:{h16}:){{6}}{_IPV4}"]
    for left in range(0, 9 - min_elided):
        left_part = "" if left == 0 else f"{h16}(?::{h16}){{{left - 1}}}"
        rights = []
        for right in range(0, 9 - min_elided - left):
            if right == 0:
                rights.append("")
                continue
            rights.append(f"{h16}(?::{h16}){{{right - 1}}}")
            if right >= 2:  # the embedded IPv4 address counts as two groups
                rights.append(f"(?:{h16}:){{{right - 2}}}{_IPV4}")
        forms.append(f"{left_part}::(?:{'|'.join(rights)})")
    return "(?:" + "|".join(forms) + ")"


def _bound_length(dfa: ByteDFA, limit: int) -> ByteDFA:
    """Strings of ``dfa`` with at most ``limit`` bytes (layered product, built directly)."""
    table = dfa.transitions
    layers = [np.array([dfa.initial], dtype=np.int64)]
    for _ in range(limit):
        reached = np.unique(table[layers[-1]])
        reached = reached[reached != DEAD]
        if reached.size == 0:
            break
        layers.append(reached)
    offsets = np.cumsum([0] + [len(layer) for layer in layers])
    product = np.full((int(offsets[-1]), 256), DEAD, dtype=np.int32)
    accepting = np.zeros(int(offsets[-1]), dtype=bool)
    for k, layer in enumerate(layers):
        accepting[offsets[k] : offsets[k + 1]] = dfa.accepting[layer]
        if k + 1 < len(layers):
            lookup = np.full(dfa.num_states + 1, DEAD, dtype=np.int32)  # lookup[DEAD] == DEAD
            lookup[layers[k + 1]] = np.arange(offsets[k + 1], offsets[k + 2], dtype=np.int32)
            product[offsets[k] : offsets[k + 1]] = lookup[table[layer]]
    return dfa_from_table(product, 0, accepting)


# --------------------------------------------------------------------------- dates and times

# Years 0001-9999; leap years are divisible by 4, centuries only when divisible by 400.
_YEAR = "(?:[0-9]{3}[1-9]|[0-9]{2}[1-9]0|[0-9][1-9]00|[1-9]000)"
_NONZERO_DIV4 = "(?:0[48]|[2468][048]|[13579][26])"  # 04, 08, ..., 96
_LEAP_YEAR = f"(?:[0-9]{{2}}{_NONZERO_DIV4}|{_NONZERO_DIV4}00)"
_DATE = (
    rf"{_YEAR}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
    r"|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
    r"|02-(?:0[1-9]|1[0-9]|2[0-8]))"
    rf"|{_LEAP_YEAR}-02-29"
)
_HOUR = "(?:[01][0-9]|2[0-3])"
_MINUTE = "[0-5][0-9]"
_FRACTION = r"(?:\.[0-9]+)?"


def _time_pattern() -> str:
    ordinary = rf"{_HOUR}:{_MINUTE}:[0-5][0-9]{_FRACTION}(?:[Zz]|[+-]{_HOUR}:{_MINUTE})"
    leap = []
    for local in range(24 * 60):  # local time = 23:59 UTC + offset
        plus = (local - (23 * 60 + 59)) % (24 * 60)
        minus = (23 * 60 + 59 - local) % (24 * 60)
        offsets = [r"\+%02d:%02d" % divmod(plus, 60), "-%02d:%02d" % divmod(minus, 60)]
        if plus == 0:
            offsets.append("[Zz]")
        leap.append("%02d:%02d:60%s(?:%s)" % (*divmod(local, 60), _FRACTION, "|".join(offsets)))
    return ordinary + "|" + "|".join(leap)


def _duration_pattern() -> str:
    second = "[0-9]+S"
    minute = f"[0-9]+M(?:{second})?"
    hour = f"[0-9]+H(?:{minute})?"
    time = f"T(?:{hour}|{minute}|{second})"
    day = "[0-9]+D"
    month = f"[0-9]+M(?:{day})?"
    year = f"[0-9]+Y(?:{month})?"
    date = f"(?:{day}|{month}|{year})(?:{time})?"
    return f"P(?:{date}|{time}|[0-9]+W)"


# --------------------------------------------------------------------------- hosts and mail


@functools.lru_cache(maxsize=None)
def _host_labels() -> ByteDFA:
    """Dot-separated LDH labels of 1-63 octets, ``xn--`` labels (A-labels) excluded (no length bound)."""
    alnum = "[A-Za-z0-9]"
    label = automata.difference(_rx(f"{alnum}(?:[A-Za-z0-9-]{{0,61}}{alnum})?"), _rx("[Xx][Nn]--.*"))
    return automata.concatenate([automata.star(automata.concatenate([label, _rx(r"\.")])), label])


@functools.lru_cache(maxsize=None)
def _mailbox() -> ByteDFA:
    """``email`` without the 254-octet bound on the whole address."""
    atext = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
    dot_atom = rf"{atext}+(?:\.{atext}+)*"
    quoted = r'"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\[\x20-\x7e])+"'
    local = _bound_length(_rx(f"{dot_atom}|{quoted}"), 64)
    literal = _rx(rf"\[(?:{_IPV4}|IPv6:{_ipv6(min_elided=2)})\]")
    domain = automata.union(_host_labels(), literal, max_states=_MAX_STATES)
    return automata.concatenate([local, _rx("@"), domain], max_states=_MAX_STATES)


def _email() -> ByteDFA:
    return _bound_length(_mailbox(), 254)


# --------------------------------------------------------------------------- URIs and IRIs


def _uri_patterns(iri: bool) -> tuple[str, str]:
    """(absolute, reference) regexes of RFC 3986, or of RFC 3987 when ``iri``."""
    unreserved = _UNRESERVED + (_UCSCHAR if iri else "")
    pchar = f"(?:[{unreserved}{_SUB_DELIMS}:@]|{_PCT})"
    scheme = r"[A-Za-z][A-Za-z0-9+\-.]*"
    userinfo = f"(?:[{unreserved}{_SUB_DELIMS}:]|{_PCT})*"
    ip_future = rf"[vV]{_HEX}+\.[{_UNRESERVED}{_SUB_DELIMS}:]+"
    host = rf"(?:\[(?:{_ipv6()}|{ip_future})\]|(?:[{unreserved}{_SUB_DELIMS}]|{_PCT})*)"
    authority = f"(?:{userinfo}@)?{host}(?::[0-9]*)?"
    segment = f"{pchar}*"
    path_abempty = f"(?:/{segment})*"
    path_absolute = f"/(?:{pchar}+(?:/{segment})*)?"
    path_rootless = f"{pchar}+(?:/{segment})*"
    path_noscheme = f"(?:[{unreserved}{_SUB_DELIMS}@]|{_PCT})+(?:/{segment})*"
    private = _IPRIVATE if iri else ""
    query = rf"(?:\?(?:{pchar}|[/?{private}])*)?"
    fragment = f"(?:#(?:{pchar}|[/?])*)?"
    absolute = f"{scheme}:(?://{authority}{path_abempty}|{path_absolute}|{path_rootless})?{query}{fragment}"
    relative = f"(?://{authority}{path_abempty}|{path_absolute}|{path_noscheme})?{query}{fragment}"
    return absolute, f"{absolute}|{relative}"


def _uri_template_pattern() -> str:
    literal = rf"(?:[\x21\x23\x24\x26-\x3b\x3d\x3f-\x5b\x5d\x5f\x61-\x7a\x7e{_UCSCHAR}{_IPRIVATE}]|{_PCT})"
    varchar = f"(?:[A-Za-z0-9_]|{_PCT})"
    varspec = rf"{varchar}(?:\.?{varchar})*(?::[1-9][0-9]{{0,3}}|\*)?"
    expression = rf"\{{[+#./;?&]?{varspec}(?:,{varspec})*\}}"
    return f"(?:{literal}|{expression})*"


_JSON_POINTER = "(?:/(?:[^/~]|~[01])*)*"


# --------------------------------------------------------------------------- ECMA-262 regex subset

_REGEX_MAX_DEPTH = 3
_REGEX_CHAR_ESCAPE = rf"\\(?:[fnrtv]|x{_HEX}{{2}}|u{_HEX}{{4}}|[\^$\\.*+?()\[\]{{}}|/])"


def _regex_subset() -> ByteDFA:
    # Character classes: items are literals, escapes and ordered ranges. Unescaped "[", "-",
    # "^" and "|" are left out, and "&" and "~" are never doubled: Python reads "[[", "--",
    # "&&", "~~" and "||" as set operations to come and warns.
    ranges = [f"{first}-[{first}-{last}]" for group in ("0123456789", "abcdefghijklmnopqrstuvwxyz",
                                                        "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
              for first, last in ((c, group[-1]) for c in group)]
    plain = rf"(?:[^\\\]\[\-\^&~|]|{_REGEX_CHAR_ESCAPE}|\\[dDsSwWb\-]|{'|'.join(ranges)})"
    amp_tilde = "(?:&(?:~&)*~?|~(?:&~)*&?)"  # alternating & and ~, never doubled
    body = f"(?:(?:{plain}|{amp_tilde}{plain})+{amp_tilde}?|{amp_tilde})"
    character_class = rf"\[\^?{body}\]"
    atom = rf"(?:[^\^$\\.*+?()\[\]{{}}|]|\.|{_REGEX_CHAR_ESCAPE}|\\[dDsSwW]|{character_class})"
    digits = "(?:0|[1-9][0-9]{0,2})"
    bounded = "|".join(f"{n},(?:[{n}-9]|[1-9][0-9]{{1,2}})" for n in range(10))
    quantifier = rf"(?:[*+?]|\{{{digits},?\}}|\{{(?:{bounded})\}})\??"
    # A pattern is its alternatives joined by "|": any sequence of terms and bars.
    pattern = ""
    for depth in range(_REGEX_MAX_DEPTH + 1):
        groups = rf"|\((?:(?:\?:)?{pattern}\)(?:{quantifier})?|\?[=!]{pattern}\))" if depth else ""
        pattern = rf"(?:{atom}(?:{quantifier})?|\^|\$|\\[bB]{groups}|\|)*"
    return _rx(pattern)


# --------------------------------------------------------------------------- registry


@functools.lru_cache(maxsize=None)
def _patterns() -> dict[str, str]:
    uri, uri_reference = _uri_patterns(iri=False)
    iri, iri_reference = _uri_patterns(iri=True)
    time = _time_pattern()
    return {
        "date": _DATE,
        "time": time,
        "date-time": f"(?:{_DATE})[Tt](?:{time})",
        "duration": _duration_pattern(),
        "ipv4": _IPV4,
        "ipv6": _ipv6(),
        "uuid": f"{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}",
        "uri": uri,
        "uri-reference": uri_reference,
        "iri": iri,
        "iri-reference": iri_reference,
        "uri-template": _uri_template_pattern(),
        "json-pointer": _JSON_POINTER,
        "relative-json-pointer": f"(?:0|[1-9][0-9]*)(?:#|{_JSON_POINTER})",
    }


_BUILDERS = {
    "hostname": lambda: _bound_length(_host_labels(), _COUNTED_FORMATS["hostname"][1]),
    "email": _email,
    "regex": _regex_subset,
}

FORMATS: frozenset[str] = frozenset(
    ["date", "time", "date-time", "duration", "ipv4", "ipv6", "uuid", "uri", "uri-reference", "iri",
     "iri-reference", "uri-template", "json-pointer", "relative-json-pointer"] + list(_BUILDERS)
)
"""The format names :func:`format_dfa` asserts."""

UNSUPPORTED_FORMATS: frozenset[str] = frozenset({"idn-email", "idn-hostname"})
"""Standard format names (draft7 and 2020-12) we refuse: no DFA can be given without either
accepting invalid strings or rejecting almost every valid one."""


_COUNTED_FORMATS = {"hostname": (_host_labels, 253), "email": (_mailbox, 254)}
"""Formats whose automaton is a smaller one under a bound on its (ASCII) length: the bound
multiplies the states (24k for either), so schemas count it instead (see
``strings.CountedStrings``)."""


@functools.lru_cache(maxsize=None)
def counted_format(name: str) -> "tuple[ByteDFA, int] | None":
    """(the automaton without its length bound, the most code points) of a format whose
    length is best counted, else None. ``with_length`` of the two is :func:`format_dfa`.
    Shipped like the formats' automata (building email's takes ~100 ms)."""
    if name not in _COUNTED_FORMATS:
        return None
    from .format_data import shipped_unbounded_dfa

    unbounded = shipped_unbounded_dfa(name)
    return (unbounded if unbounded is not None else build_unbounded_dfa(name)), _COUNTED_FORMATS[name][1]


def build_unbounded_dfa(name: str) -> "ByteDFA | None":
    """The automaton of a counted format without its length bound, built from scratch."""
    found = _COUNTED_FORMATS.get(name)
    return None if found is None else found[0]()


@functools.lru_cache(maxsize=None)
def format_dfa(name: str) -> ByteDFA | None:
    """Minimal DFA of the decoded string contents valid for ``format: name``; None if unknown.

    Taken from the automata shipped with the package (:mod:`.format_data`: a few
    milliseconds) when their data matches the current construction, else built with
    :func:`build_format_dfa` (up to a few hundred milliseconds); the two are identical,
    state for state. Results are cached and shared: treat their arrays as read-only. Names
    in :data:`UNSUPPORTED_FORMATS` also give None (check that set to refuse them).
    """
    if name not in FORMATS:
        return None
    from .format_data import shipped_format_dfa

    shipped = shipped_format_dfa(name)
    return shipped if shipped is not None else build_format_dfa(name)


def build_format_dfa(name: str) -> ByteDFA:
    """The automaton of a format in :data:`FORMATS`, constructed from scratch (what the
    shipped data is written from and checked against)."""
    builder = _BUILDERS.get(name)
    if builder is not None:
        return builder()
    return _rx(_patterns()[name])


if __name__ == "__main__":  # python -m gramalign.grammar.json_schema.formats --write-data [DIR]
    from gramalign.grammar.json_schema.format_data import main

    raise SystemExit(main())
