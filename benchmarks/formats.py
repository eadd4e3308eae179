"""JSON Schema ``format`` fields, one at a time, as a server meets them: gramalign vs llguidance.

    PYTHONPATH=src .venv/bin/python benchmarks/formats.py [--formats uuid,email] [--values 20]
        [--engines gramalign,llguidance[,XGrammar]] [--seed 0] [--timeout 60]

For every format gramalign asserts (``gramalign.grammar.json_schema.formats.FORMATS``) the
schema is a small object with the format as one string field among plain ones::

    {"type":"object","properties":{"name":{"type":"string"},"value":{"type":"string","format":F},
     "note":{"type":"string"}},"required":["name","value","note"]}

and for each (format, engine) pair a fresh worker process (benchmarks/maskbench.py's Worker and
engine classes, Llama-3.2 tokenizer) loads the vocabulary and warms up as a server would (it
compiles ``{"type":"object"}`` and walks a small instance, so kernels and lazy imports are
loaded), then:

- compiles the format schema and fills the first mask: "compile ms" (time to first mask);
- walks ``--values`` instances whose ``value`` fields are novel, realistic values of the format
  (a seeded generator per format below; names and notes vary too), compact JSON tokenized by
  Llama-3.2, token by token, filling a full-vocabulary bitmask before each token; an instance
  the engine refuses is a "value rejected". "preempted masks": fills during which the kernel
  switched the worker out, so their time may include a wait (a 4 ms time slice on a shared core
  is above the 3 ms target): run on a quiet, pinned core.

Each value is checked before the run with jsonschema's FormatChecker where it has a checker for
the format (with the packages installed here: date, email, ipv4, ipv6, regex, uuid) and with
gramalign's own automaton for the format (tokenizer-free); a value either rejects is listed.

Targets, one verdict line per format: gramalign compiles in < 50 ms; gramalign's masks total
(all values) <= llguidance's; no gramalign mask > 3 ms. llguidance refuses some formats
(``Unknown format``): the comparison is then n/a. XGrammar runs when ``--engines`` names it.
"""

from __future__ import annotations

import argparse
import calendar
import json
import os
import random
import sys
import uuid
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from grammar_masks import llama_tokenizer  # noqa: E402
from maskbench import ENGINES, WARM_UP_INSTANCE, Worker, header_lines, parse_engines, print_table  # noqa: E402

COMPILE_TARGET_MS = 50.0
MASK_TARGET_MS = 3.0

WORDS = ("alpha atlas bravo cedar cobalt delta ember falcon garnet harbor indigo juniper kestrel lumen maple "
         "nectar onyx orbit pepper quartz raven river sierra summit tundra umber violet willow xenon yarrow "
         "zephyr north south cloud data mail shop blog static media assets billing status").split()
FIRST_NAMES = "alice bob carol dave erin frank grace heidi ivan judy mallory nia olivia peggy rupert trent".split()
LAST_NAMES = "smith jones garcia miller davis lopez wilson anderson thomas moore martin lee walker young".split()
TLDS = ["com", "org", "net", "io", "dev", "co.uk", "de", "fr", "jp", "app", "cloud"]
UNICODE_WORDS = ["例え", "テスト", "パス", "ファイル", "bücher", "straße", "café", "пример", "путь", "données", "ñandú"]


def schema_for(format_name: str) -> dict:
    return {"type": "object",
            "properties": {"name": {"type": "string"}, "value": {"type": "string", "format": format_name},
                           "note": {"type": "string"}},
            "required": ["name", "value", "note"]}


# -- value generators: rng -> one realistic value; each stays inside what gramalign documents
#    as its exact language (formats.py's module docstring), so a rejection is news

def _label(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.5:
        return rng.choice(WORDS)
    if kind < 0.75:
        return f"{rng.choice(WORDS)}{rng.randint(1, 99)}"
    return f"{rng.choice(WORDS)}-{rng.choice(['eu', 'us', 'ap', 'v2', 'west', 'east'])}-{rng.randint(1, 9)}"


def hostname(rng):
    return ".".join([_label(rng) for _ in range(rng.randint(1, 3))] + [rng.choice(TLDS)])


def email(rng):
    first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
    local = rng.choice([f"{first}.{last}", f"{first}_{last}+{rng.choice(WORDS)}", f"{first}{rng.randint(1, 999)}",
                        f"{first[0]}{last}", f'"{first} {last}"'])
    domain = rng.choices([hostname(rng), f"[{ipv4(rng)}]", f"[IPv6:{ipv6(rng)}]"], [0.85, 0.1, 0.05])[0]
    return f"{local}@{domain}"


def ipv4(rng):
    return ".".join(str(rng.choice([rng.randint(0, 255), rng.randint(0, 255), rng.randint(1, 9), 10, 192]))
                    for _ in range(4))


def _ipv6_text(groups: list[int], rng, tail: str = "", upper: bool = False, pad: bool = False) -> str:
    """RFC 4291 text: the longest run of zero groups as "::" (even a single one, sometimes)."""
    hexes = [f"{g:04x}" if pad else f"{g:x}" for g in groups]
    hexes = [h.upper() for h in hexes] if upper else hexes
    runs = [(j - i, i) for i in range(len(groups)) for j in range(i + 1, len(groups) + 1)
            if all(g == 0 for g in groups[i:j])]
    length, start = max(runs, default=(0, 0))
    tail_parts = [tail] if tail else []
    if length >= 2 or (length == 1 and rng.random() < 0.5):
        left, right = hexes[:start], hexes[start + length:] + tail_parts
        return ":".join(left) + "::" + ":".join(right)
    return ":".join(hexes + tail_parts)


def ipv6(rng):
    form = rng.randrange(6)
    if form == 5:
        return rng.choice(["::1", "fe80::1", "2001:db8::", "::ffff:" + ipv4(rng),
                           f"2001:db8:{rng.randint(1, 0xffff):x}::"])
    embedded = form == 4  # the last 32 bits as a dotted quad
    count = 6 if embedded else 8
    groups = [rng.choice([0, rng.randint(0, 0xFFFF), rng.randint(0, 0xFF)]) for _ in range(count)]
    start = rng.randint(0, count - 1)
    for i in range(start, min(count, start + rng.randint(0, 4))):
        groups[i] = 0
    return _ipv6_text(groups, rng, tail=ipv4(rng) if embedded else "", upper=form == 2, pad=form == 1)


def date(rng):
    year, month = rng.randint(1950, 2099), rng.randint(1, 12)
    return f"{year:04}-{month:02}-{rng.randint(1, calendar.monthrange(year, month)[1]):02}"


def time_of_day(rng):
    text = f"{rng.randint(0, 23):02}:{rng.randint(0, 59):02}:{rng.randint(0, 59):02}"
    if rng.random() < 0.5:
        text += "." + "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 6)))
    if rng.random() < 0.4:
        return text + "Z"
    return text + f"{rng.choice('+-')}{rng.randint(0, 14):02}:{rng.choice([0, 30, 45]):02}"


def date_time(rng):
    return f"{date(rng)}T{time_of_day(rng)}"


def duration(rng):
    if rng.random() < 0.15:
        return f"P{rng.randint(1, 52)}W"
    # RFC 3339 appendix A: components are contiguous runs (Y M D, then H M S after T)
    text = "P"
    if rng.random() < 0.7:
        units = "YMD"
        start = rng.randrange(3)
        for unit in units[start:rng.randint(start + 1, 3)]:
            text += f"{rng.randint(1, 30)}{unit}"
    if text == "P" or rng.random() < 0.5:
        units = "HMS"
        start = rng.randrange(3)
        text += "T" + "".join(f"{rng.randint(1, 59)}{u}" for u in units[start:rng.randint(start + 1, 3)])
    return text


def uuid_(rng):
    value = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    return value.upper() if rng.random() < 0.2 else value


def _path(rng, words=WORDS):
    return "/" + "/".join(rng.choice(words) for _ in range(rng.randint(0, 4)))


def _query(rng):
    return "?" + "&".join(f"{rng.choice(WORDS)}={rng.choice([rng.choice(WORDS), str(rng.randint(0, 999)), 'a%20b'])}"
                          for _ in range(rng.randint(1, 3)))


def uri(rng):
    kind = rng.random()
    if kind < 0.7:
        port = f":{rng.choice([8080, 8443, 3000])}" if rng.random() < 0.2 else ""
        text = f"{rng.choice(['https', 'http'])}://{hostname(rng)}{port}{_path(rng)}"
        text += _query(rng) if rng.random() < 0.4 else ""
        return text + (f"#{rng.choice(WORDS)}" if rng.random() < 0.2 else "")
    return rng.choice([f"mailto:{rng.choice(FIRST_NAMES)}.{rng.choice(LAST_NAMES)}@{hostname(rng)}",
                       f"urn:isbn:{rng.randint(10**9, 10**10 - 1)}", f"file:///etc/{rng.choice(WORDS)}.conf",
                       f"ftp://{rng.choice(FIRST_NAMES)}@{hostname(rng)}/pub/{rng.choice(WORDS)}.tar.gz",
                       f"https://[{ipv6(rng)}]:8080/", f"urn:uuid:{uuid_(rng).lower()}"])


def uri_reference(rng):
    return rng.choice([uri(rng), _path(rng) + _query(rng), f"../{rng.choice(WORDS)}/{rng.choice(WORDS)}.png",
                       f"#{rng.choice(WORDS)}-{rng.randint(1, 9)}", f"//cdn.{hostname(rng)}/{rng.choice(WORDS)}.js",
                       f"{rng.choice(WORDS)}.html", _query(rng)])


def iri(rng):
    host = rng.choice([hostname(rng), f"{rng.choice(UNICODE_WORDS)}.{rng.choice(['jp', 'de', 'рф', 'fr'])}"])
    text = f"https://{host}{_path(rng, UNICODE_WORDS + WORDS)}"
    if rng.random() < 0.4:
        text += f"?{rng.choice(UNICODE_WORDS)}={rng.choice(UNICODE_WORDS)}"
    return text + (f"#{rng.choice(UNICODE_WORDS)}" if rng.random() < 0.3 else "")


def iri_reference(rng):
    return rng.choice([iri(rng), _path(rng, UNICODE_WORDS) or "/", f"../{rng.choice(UNICODE_WORDS)}/index.html",
                       f"#{rng.choice(UNICODE_WORDS)}"])


def _pointer_token(rng):
    return rng.choice([rng.choice(WORDS), str(rng.randint(0, 20)), f"{rng.choice(WORDS)}~1{rng.choice(WORDS)}",
                       f"{rng.choice(WORDS)}~0x", "", f"{rng.choice(WORDS)} {rng.choice(WORDS)}"])


def json_pointer(rng):
    return "".join("/" + _pointer_token(rng) for _ in range(rng.randint(0, 4)))


def relative_json_pointer(rng):
    return f"{rng.randint(0, 3)}" + rng.choice(["#", json_pointer(rng)])


def uri_template(rng):
    parts = [f"https://api.{hostname(rng)}"]
    for _ in range(rng.randint(1, 3)):
        parts.append(rng.choice([f"/{rng.choice(WORDS)}", "/{id}", "{/path*}", "/{name:3}", "{.format}",
                                 "{;params*}", "/users/{user_id}/posts"]))
    parts.append(rng.choice(["", "{?page,per_page}", "{?q}{&sort,order}", "{#section}", "{?fields*}"]))
    return rng.choice(["".join(parts), "{+base}" + "".join(parts[1:])])


_REGEX_ATOMS = [r"[a-z]", r"[A-Z0-9_]", r"\d", r"\w", r"\s", r"[^\s@]", r"\.", "[a-fA-F0-9]", "x", "abc", "-", r"\/"]
_REGEX_QUANTIFIERS = ["", "", "+", "*", "?", "{2}", "{1,3}", "{2,}", "+?"]


def regex(rng):
    def sequence(depth):
        items = []
        for _ in range(rng.randint(1, 4)):
            if depth < 2 and rng.random() < 0.2:
                inner = "|".join(sequence(depth + 1) for _ in range(rng.randint(1, 3)))
                items.append(f"({rng.choice(['', '?:'])}{inner})" + rng.choice(_REGEX_QUANTIFIERS))
            else:
                items.append(rng.choice(_REGEX_ATOMS) + rng.choice(_REGEX_QUANTIFIERS))
        return "".join(items)

    return rng.choice(["^", ""]) + sequence(0) + rng.choice(["$", ""])


GENERATORS = {"date": date, "date-time": date_time, "duration": duration, "email": email, "hostname": hostname,
              "ipv4": ipv4, "ipv6": ipv6, "iri": iri, "iri-reference": iri_reference, "json-pointer": json_pointer,
              "regex": regex, "relative-json-pointer": relative_json_pointer, "time": time_of_day, "uri": uri,
              "uri-reference": uri_reference, "uri-template": uri_template, "uuid": uuid_}


def _sentence(rng, low, high):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high))).capitalize()


def make_values(format_name: str, count: int, seed: int, format_checker, gramalign_accepts) -> tuple[list, list]:
    """``count`` distinct values (jsonschema's checker agreeing, where it has one) and the list
    of (value, complaint) for values gramalign's automaton or jsonschema's checker rejected."""
    rng = random.Random(f"{seed}:{format_name}")
    values, complaints, tries = [], [], 0
    while len(values) < count and tries < 50 * count:
        tries += 1
        value = GENERATORS[format_name](rng)
        if value in values:
            continue
        if format_name in format_checker.checkers and not format_checker.conforms(value, format_name):
            complaints.append((value, "jsonschema's FormatChecker rejects it (a generator bug: not used)"))
            continue
        if not gramalign_accepts(value):
            complaints.append((value, "gramalign's format automaton rejects it (kept)"))
        values.append(value)
    return values, complaints


def gramalign_format_check(format_name: str):
    from gramalign.grammar.grammar import Grammar
    from gramalign.grammar.parser_tables import build_parser_tables
    from gramalign.parsing import IncrementalParser

    parser = IncrementalParser(build_parser_tables(Grammar.from_json_schema({"type": "string", "format": format_name})))
    return lambda value: parser.accepts(json.dumps(value, ensure_ascii=False).encode("utf-8"))


def instances(values: list[str], seed: int) -> list[str]:
    # one seed for every format: the name and note around the values are the same from format to format
    rng = random.Random(f"{seed}:instances")
    return [json.dumps({"name": f"{rng.choice(FIRST_NAMES).title()} {rng.choice(LAST_NAMES).title()}",
                        "value": value, "note": _sentence(rng, 2, 8)}, separators=(",", ":"), ensure_ascii=False)
            for value in values]


def measure(engine: str, format_name: str, walks: list, warm_up: list, timeout: float) -> dict:
    """One fresh worker: warm up, then compile the format schema and walk every instance."""
    worker = Worker(engine)
    try:
        warm = worker.run(({"schema": {"type": "object"}}, warm_up), timeout)
        if warm.get("status") != "ok":
            return {"status": f"warm-up {warm.get('status')}: {warm.get('error', '')}"}
        return worker.run(({"schema": schema_for(format_name)}, walks), timeout)
    finally:
        worker.close()


ROW_COLUMNS = ["compile ms", "masks", "masks total ms", "mean total per value ms", "max mask ms",
               f"masks > {MASK_TARGET_MS:.0f} ms", "preempted masks", "values rejected"]


def row(result: dict) -> list:
    if result["status"] != "ok":
        return [result["status"] + (": " + result["error"][:70] if result.get("error") else "")] + ["-"] * 7
    masks = result["masks"]
    return [result["ttfm"] / 1000, len(masks), sum(masks) / 1000, sum(masks) / 1000 / max(1, len(result["accepted"])),
            max(masks, default=0) / 1000, sum(m > MASK_TARGET_MS * 1000 for m in masks), len(result["preempted"]),
            sum(not ok for ok in result["accepted"])]


def _total_over(result: dict, chosen: list[bool]) -> float:
    """Milliseconds of the masks of the chosen walks."""
    ends = np.cumsum(result["walk_masks"])
    return sum(sum(result["masks"][end - count:end]) for end, count, keep in
               zip(ends, result["walk_masks"], chosen) if keep) / 1000


def verdict(format_name: str, ours: dict, theirs: dict | None) -> str:
    if ours["status"] != "ok":
        return f"- {format_name}: FAIL (gramalign: {ours['status']} {ours.get('error', '')[:120]})"
    compile_ms, total_ms = ours["ttfm"] / 1000, sum(ours["masks"]) / 1000
    worst_ms = max(ours["masks"], default=0) / 1000
    checks = [(compile_ms < COMPILE_TARGET_MS, f"compile {compile_ms:.1f} ms < {COMPILE_TARGET_MS:.0f}")]
    if theirs is None or theirs["status"] != "ok":
        checks.append((None, "masks total vs llguidance n/a (" + ("not run" if theirs is None else "llguidance: "
                                                                  + theirs.get("error", theirs["status"])[:60]) + ")"))
    else:
        both = [a and b for a, b in zip(ours["accepted"], theirs["accepted"])]
        if all(both):
            mine, their_total, note = total_ms, sum(theirs["masks"]) / 1000, ""
        else:  # a value one engine rejects is walked only part way: compare the values both accept
            mine, their_total = _total_over(ours, both), _total_over(theirs, both)
            note = f" (over the {sum(both)} values both accept)"
        checks.append((mine <= their_total, f"masks total {mine:.2f} ms <= llguidance {their_total:.2f}{note}"))
    preempted = " (that mask was preempted)" if ours["masks"] and ours["masks"].index(max(ours["masks"])) in \
        ours["preempted"] else ""
    checks.append((worst_ms <= MASK_TARGET_MS, f"max mask {worst_ms:.2f} ms{preempted} <= {MASK_TARGET_MS:.0f}"))
    failed = any(ok is False for ok, _ in checks)
    words = "; ".join(f"{text}: {'n/a' if ok is None else 'ok' if ok else 'FAIL'}" for ok, text in checks)
    return f"- {format_name}: {'FAIL' if failed else 'PASS'} ({words})"


def main() -> None:
    from gramalign.grammar.json_schema.formats import FORMATS

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--formats", default=",".join(sorted(FORMATS)), help="comma-separated subset")
    parser.add_argument("--values", type=int, default=20, help="novel values walked per format")
    parser.add_argument("--engines", default="gramalign,llguidance", help="from " + ", ".join(ENGINES))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per worker task")
    args = parser.parse_args()
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        parser.error(f"unknown format(s) {', '.join(unknown)}; choose from {', '.join(sorted(FORMATS))}")
    try:
        engines = parse_engines(args.engines)
    except ValueError as exc:
        parser.error(str(exc))
    # a disk cache would hand a "fresh" process what an earlier one compiled
    os.environ.pop("GRAMALIGN_CACHE_DIR", None)

    import jsonschema

    tokenizer = llama_tokenizer()
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    print("\n".join(header_lines(tokenizer, sys.argv)))
    print(f"formats: {len(formats)}, {args.values} values each, engines {', '.join(engines)}, seed {args.seed}; "
          f"jsonschema format checkers for: {', '.join(f for f in formats if f in checker.checkers) or 'none'}\n")
    encode = lambda text: tokenizer.encode(text, add_special_tokens=False).ids  # noqa: E731
    warm_up = [(encode(WARM_UP_INSTANCE), True)]
    rows, verdicts, notes = [], [], []
    for format_name in formats:
        values, complaints = make_values(format_name, args.values, args.seed, checker,
                                         gramalign_format_check(format_name))
        notes += [f"- {format_name} {value!r}: {why}" for value, why in complaints]
        notes.append(f"- {format_name} examples: " + ", ".join(repr(v) for v in values[:3]))
        walks = [(encode(text), True) for text in instances(values, args.seed)]
        results = {engine: measure(engine, format_name, walks, warm_up, args.timeout) for engine in engines}
        rows += [([format_name, engine], row(result)) for engine, result in results.items()]
        if "gramalign" in results:
            verdicts.append(verdict(format_name, results["gramalign"], results.get("llguidance")))
        print(f"{format_name}: done", file=sys.stderr, flush=True)
    print_table(["format", "engine"], ROW_COLUMNS, rows)
    print("Verdicts (targets: gramalign compile < 50 ms; gramalign masks total <= llguidance's; "
          "no gramalign mask > 3 ms)\n")
    print("\n".join(verdicts) + "\n")
    print("Values\n")
    print("\n".join(notes))


if __name__ == "__main__":
    main()
