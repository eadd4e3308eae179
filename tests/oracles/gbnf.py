"""A reference recognizer for GBNF, written from the GBNF definition: the rules' syntax
trees (``gbnf_frontend.parse_gbnf``) read as a context-free grammar over characters and
run by an Earley recognizer, with none of gramalign's IR, lexer or LALR table. Also a
random sentence generator for the same trees."""

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


def _contains(intervals, char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in intervals)


def earley_accepts(rules: dict, text: str, start: str = "root") -> bool:
    bnf, _ = _bnf(rules)
    nullable: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, alternatives in bnf.items():
            if name not in nullable and any(all(s[0] == "nt" and s[1] in nullable for s in alt) for alt in alternatives):
                nullable.add(name)
                changed = True
    chart = [dict() for _ in range(len(text) + 1)]  # item -> None (ordered set)
    for k in range(len(bnf[start])):
        chart[0][(start, k, 0, 0)] = None
    for i in range(len(text) + 1):
        agenda = list(chart[i])
        seen = set(agenda)

        def add(item, position):
            if position == i:
                if item not in seen:
                    seen.add(item)
                    chart[i][item] = None
                    agenda.append(item)
            else:
                chart[position][item] = None

        while agenda:
            name, k, dot, origin = agenda.pop()
            alternative = bnf[name][k]
            if dot < len(alternative):
                symbol = alternative[dot]
                if symbol[0] == "nt":
                    for j in range(len(bnf[symbol[1]])):
                        add((symbol[1], j, 0, i), i)
                    if symbol[1] in nullable:
                        add((name, k, dot + 1, origin), i)
                elif i < len(text) and _contains(symbol[1], text[i]):
                    add((name, k, dot + 1, origin), i + 1)
            else:
                for waiting in list(chart[origin]):
                    w_name, w_k, w_dot, w_origin = waiting
                    w_alt = bnf[w_name][w_k]
                    if w_dot < len(w_alt) and w_alt[w_dot] == ("nt", name):
                        add((w_name, w_k, w_dot + 1, w_origin), i)
    return any(name == start and dot == len(bnf[name][k]) and origin == 0
               for name, k, dot, origin in chart[len(text)])


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
