"""A reference recognizer for GBNF, written from the GBNF definition: the rules' syntax
trees (``gbnf_frontend.parse_gbnf``) read as a context-free grammar over characters and
run by an Earley recognizer, with none of gramalign's IR, lexer or LALR table: whether a
text is a sentence (:func:`earley_accepts`), whether it is the beginning of one
(:func:`earley_prefix_viable`), both for every prefix or every short string at once. Also
a random sentence generator for the same trees."""

from __future__ import annotations

import random


def _bnf(rules: dict) -> tuple[dict, str]:
    """name -> list of alternatives (tuples of ("nt", name) / ("chars", intervals));
    repetitions unrolled with right recursion (the front end uses left recursion)."""
    bnf: dict[str, list[tuple]] = {}
    counter = [0]

    def fresh(alternatives) -> tuple:
        counter[0] += 1
        name = f"#{counter[0]}"
        bnf[name] = alternatives
        return ("nt", name)

    def seq(node) -> tuple:
        if node[0] == "seq":
            return tuple(s for item in node[1] for s in seq(item))
        return (sym(node),)

    def sym(node) -> tuple:
        kind = node[0]
        if kind == "chars":
            return ("chars", node[1])
        if kind == "ref":
            return ("nt", node[1])
        if kind == "seq":
            return fresh([seq(node)])
        if kind == "alt":
            return fresh([seq(s) for s in node[1]])
        _, body, low, high = node
        one = seq(body)
        if high is None:
            star = ("nt", f"#{counter[0] + 1}*")
            bnf[star[1]] = [(), one + (star,)]
            counter[0] += 1
            return fresh([one * low + (star,)])
        return fresh([one * k for k in range(low, high + 1)])

    for name, (body, _, _) in rules.items():
        bnf[name] = [seq(s) for s in body[1]] if body[0] == "alt" else [seq(body)]
    return bnf, "root"


def _nullable(bnf: dict) -> set[str]:
    nullable: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, alternatives in bnf.items():
            if name not in nullable and any(all(s[0] == "nt" and s[1] in nullable for s in alt)
                                            for alt in alternatives):
                nullable.add(name)
                changed = True
    return nullable


def _productive_part(bnf: dict) -> dict:
    """``bnf`` without the alternatives that use a rule deriving no string of characters
    (such a rule keeps no alternative). The language is the same; what changes is that every
    Earley item left can be completed, so a non-empty chart means a viable prefix."""
    productive: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, alternatives in bnf.items():
            if name not in productive and any(all(s[0] == "chars" or s[1] in productive for s in alt)
                                              for alt in alternatives):
                productive.add(name)
                changed = True
    return {name: [alt for alt in alternatives if all(s[0] == "chars" or s[1] in productive for s in alt)]
            for name, alternatives in bnf.items()}


class _Chart:
    """The Earley items of one position: ``items`` (a set), and by symbol after the dot the
    items waiting for a rule (``waiting``) or a character (``scans``)."""

    __slots__ = ("items", "waiting", "scans", "complete")

    def __init__(self):
        self.items: set = set()
        self.waiting: dict[str, list] = {}
        self.scans: list = []  # (intervals, the item with its dot past them)
        self.complete: set = set()  # (name, origin) of the items with the dot at the end


class Earley:
    """An Earley recognizer of the rules, read one character at a time: charts are tuples
    of closed :class:`_Chart` objects, never changed once made, so that strings sharing a
    prefix share its charts (:func:`earley_verdicts` walks every string that way).

    Nullable rules are handled as Aycock and Horspool do (predicting a nullable rule also
    moves the dot past it), so completions never need to revisit a chart. With
    ``productive_only`` the rules that derive no string are dropped first: then a chart is
    non-empty exactly when the text read so far is a prefix of a sentence."""

    def __init__(self, rules: dict, start: str = "root", *, productive_only: bool = False):
        bnf, _ = _bnf(rules)
        self.bnf = _productive_part(bnf) if productive_only else bnf
        self.nullable = _nullable(self.bnf)
        self.start = start

    def initial(self) -> tuple:
        return (self._close(0, [(self.start, k, 0, 0) for k in range(len(self.bnf[self.start]))], ()),)

    def advance(self, charts: tuple, char: str) -> tuple:
        """``charts`` with the chart after one more character (empty when nothing scans it)."""
        code = ord(char)
        kernel = [item for intervals, item in charts[-1].scans
                  if any(low <= code <= high for low, high in intervals)]
        return charts + (self._close(len(charts), kernel, charts),)

    def run(self, text: str) -> tuple:
        charts = self.initial()
        for char in text:
            if not charts[-1].items:
                return charts + tuple(_Chart() for _ in range(len(text) + 1 - len(charts)))
            charts = self.advance(charts, char)
        return charts

    def accepts(self, charts: tuple) -> bool:
        return (self.start, 0) in charts[-1].complete

    def _close(self, i: int, kernel: list, before: tuple) -> _Chart:
        bnf, nullable = self.bnf, self.nullable
        chart = _Chart()
        items, waiting, complete = chart.items, chart.waiting, chart.complete
        agenda = []
        for item in kernel:
            if item not in items:
                items.add(item)
                agenda.append(item)
        while agenda:
            name, k, dot, origin = item = agenda.pop()
            alternative = bnf[name][k]
            if dot < len(alternative):
                kind, what = alternative[dot]
                following = (name, k, dot + 1, origin)
                if kind == "chars":
                    chart.scans.append((what, following))
                    continue
                waiting.setdefault(what, []).append(item)
                new = [(what, j, 0, i) for j in range(len(bnf[what]))]
                if what in nullable:
                    new.append(following)
            else:
                complete.add((name, origin))
                parents = waiting.get(name, ()) if origin == i else before[origin].waiting.get(name, ())
                new = [(w_name, w_k, w_dot + 1, w_origin) for w_name, w_k, w_dot, w_origin in list(parents)]
            for item in new:
                if item not in items:
                    items.add(item)
                    agenda.append(item)
        return chart


def earley_accepts(rules: dict, text: str, start: str = "root") -> bool:
    earley = Earley(rules, start, productive_only=True)
    return earley.accepts(earley.run(text))


def earley_prefix_viable(rules: dict, text: str, start: str = "root") -> bool:
    """Is ``text`` the beginning of some sentence (``text`` itself included)? An Earley
    chart after ``text`` that is not empty, once the rules that derive no string are gone."""
    earley = Earley(rules, start, productive_only=True)
    return bool(earley.run(text)[-1].items)


def earley_prefix_verdicts(rules: dict, text: str, start: str = "root") -> list[tuple[bool, bool]]:
    """``(viable, accepted)`` for every prefix ``text[:i]``, i = 0 .. len(text), in one pass."""
    earley = Earley(rules, start, productive_only=True)
    charts = earley.run(text)
    return [(bool(chart.items), (start, 0) in chart.complete) for chart in charts]


def earley_verdicts(rules: dict, alphabet: str, max_length: int, start: str = "root") -> dict[str, tuple[bool, bool]]:
    """``(viable, accepted)`` for every string over ``alphabet`` of at most ``max_length``
    characters, the strings sharing a prefix sharing its charts (no Earley work past a dead prefix)."""
    earley = Earley(rules, start, productive_only=True)
    verdicts: dict[str, tuple[bool, bool]] = {}
    dead = (False, False)

    def walk(text: str, charts) -> None:
        if charts is None:
            verdicts[text] = dead
        else:
            verdicts[text] = (bool(charts[-1].items), earley.accepts(charts))
            if not charts[-1].items:
                charts = None
        if len(text) < max_length:
            for char in alphabet:
                walk(text + char, None if charts is None else earley.advance(charts, char))

    walk("", earley.initial())
    return verdicts


def sentences_up_to(rules: dict, alphabet: str, max_length: int, start: str = "root") -> set[str]:
    """Every sentence over ``alphabet`` of at most ``max_length`` characters, found bottom-up
    (each rule's strings grown to a fixed point, no chart, no parsing): a second opinion on
    :func:`earley_verdicts` for ambiguous, cyclic and nullable grammars."""
    bnf, _ = _bnf(rules)
    derived: dict[str, set[str]] = {name: set() for name in bnf}
    changed = True
    while changed:
        changed = False
        for name, alternatives in bnf.items():
            for alternative in alternatives:
                strings = {""}
                for kind, what in alternative:
                    if kind == "chars":
                        options = {c for c in alphabet if any(low <= ord(c) <= high for low, high in what)}
                    else:
                        options = derived[what]
                    strings = {s + t for s in strings for t in options if len(s) + len(t) <= max_length}
                    if not strings:
                        break
                if not strings <= derived[name]:
                    derived[name] |= strings
                    changed = True
    return derived[start]


def random_sentence(rules: dict, rng: random.Random, start: str = "root", depth: int = 12) -> str | None:
    """A random sentence of ``start`` (None when the depth bound cuts every way out)."""

    def gen(node, depth):
        kind = node[0]
        if kind == "chars":
            low, high = rng.choice(node[1])
            return chr(rng.randint(low, min(high, low + 40)))
        if kind == "ref":
            if depth <= 0:
                raise RecursionError
            return gen(rules[node[1]][0], depth - 1)
        if kind == "seq":
            return "".join(gen(item, depth) for item in node[1])
        if kind == "alt":
            options = list(node[1])
            rng.shuffle(options)
            for option in options:
                try:
                    return gen(option, depth)
                except RecursionError:
                    continue
            raise RecursionError
        _, body, low, high = node
        count = rng.randint(low, low + 3 if high is None else min(high, low + 3))
        return "".join(gen(body, depth) for _ in range(count))

    try:
        return gen(rules[start][0], depth)
    except RecursionError:
        return None
