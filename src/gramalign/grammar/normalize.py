"""A context-free grammar rewritten for the generalized LR runtime: same language, no empty
rules, no unit cycles, no useless rules, no alternative twice.

A generalized LR parser follows every action of a conflicting table cell. With empty rules
it may push states forever without reading input (hidden left recursion: ``a -> b a "c"``
with ``b`` empty reduces ``b`` again and again), and with a unit cycle (``a -> b``,
``b -> a``) it may reduce forever; without them every reduction either pops a symbol or
climbs a chain of unit rules that ends, so a terminal is fed in bounded work. Rules that
derive no text are dropped too: a stack that could only go on through them would be a dead
end, and the runtime's masks assume every stack it keeps can still be completed.

Only recognition matters here (gramalign never builds parse trees), so the rewriting may
change the trees freely: it keeps the set of strings the start symbol derives.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import GrammarError
from .grammar import Grammar, Rule
from .limits import check_size

MAX_NULLABLE_EXPANDED = 3
"""Nullable symbols an alternative may have before it is split in two-symbol links (each
nullable symbol doubles the alternatives that leaving it out makes)."""


def normalized(grammar: Grammar) -> Grammar:
    """``grammar`` with the same language, its rules rewritten as the module docstring says.
    Raises :class:`GrammarError` when the start rule derives no text at all."""
    terminals = {t.name for t in grammar.terminals} - set(grammar.ignore)
    rules: dict[str, list[tuple[str, ...]]] = {}
    for rule in grammar.rules:  # a name defined twice means its last definition, as in the table
        rules[rule.name] = list(dict.fromkeys(rule.alternatives))
    rules = _useful(rules, terminals, grammar.start)
    rules, start = _without_empty(rules, terminals, grammar.start)
    rules = _without_unit_cycles(rules, start)
    rules = _useful(rules, terminals, start)
    check_size("max_rules", sum(map(len, rules.values())), "the generalized grammar's rules",
               "alternatives after empty rules are removed")
    return Grammar(terminals=grammar.terminals, rules=tuple(Rule(name, tuple(alts)) for name, alts in rules.items()),
                   start=start, ignore=grammar.ignore, source=grammar.source, indentation=grammar.indentation,
                   always_lexed=grammar.always_lexed, strict=grammar.strict, generalized=True)


def without_useless_rules(grammar: Grammar) -> Grammar:
    """``grammar`` without the rules and alternatives that derive no text or that the start
    never reaches (same language). Raises :class:`GrammarError` when the start derives none."""
    terminals = {t.name for t in grammar.terminals} - set(grammar.ignore)
    rules = {rule.name: list(rule.alternatives) for rule in grammar.rules}
    priority = {rule.name: rule.priority for rule in grammar.rules}
    kept = _useful(rules, terminals, grammar.start)
    return replace(grammar, rules=tuple(Rule(name, tuple(alts), priority[name]) for name, alts in kept.items()))


def productive_rules(rules: dict, terminals: set) -> set:
    """The names of ``rules`` (name -> alternatives) that derive some text of ``terminals``."""
    productive: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, alternatives in rules.items():
            if name not in productive and any(all(s in terminals or s in productive for s in alt)
                                              for alt in alternatives):
                productive.add(name)
                changed = True
    return productive


def _useful(rules: dict, terminals: set, start: str) -> dict:
    """The rules and alternatives that derive text (only productive symbols) and that the
    start reaches; alternatives listed once."""
    productive = productive_rules(rules, terminals)
    if start not in productive:
        raise GrammarError(f"the start rule {start!r} derives no text: every alternative needs a rule that never "
                           "ends (or is not defined)")
    kept = {name: list(dict.fromkeys(alt for alt in alts if all(s in terminals or s in productive for s in alt)))
            for name, alts in rules.items() if name in productive}
    reached, queue = {start}, [start]
    for name in queue:
        for alt in kept[name]:
            for symbol in alt:
                if symbol in kept and symbol not in reached:
                    reached.add(symbol)
                    queue.append(symbol)
    return {name: alts for name, alts in kept.items() if name in reached}


def _nullable(rules: dict) -> set:
    nullable: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, alternatives in rules.items():
            if name not in nullable and any(all(s in nullable for s in alt) for alt in alternatives):
                nullable.add(name)
                changed = True
    return nullable


def _without_empty(rules: dict, terminals: set, start: str) -> tuple[dict, str]:
    """No empty alternative except one of a fresh start rule (when the language has the empty
    text), which no rule refers to."""
    nullable = _nullable(rules)
    fresh = _Fresh(rules)
    split: dict[str, list[tuple[str, ...]]] = {}
    for name, alternatives in rules.items():
        out = split.setdefault(name, [])
        for alt in alternatives:
            if sum(s in nullable for s in alt) <= MAX_NULLABLE_EXPANDED or len(alt) <= 2:
                out.append(alt)
                continue
            # a -> s1 s2 ... sn  becomes  a -> s1 h1, h1 -> s2 h2, ..., h(n-2) -> s(n-1) sn
            head = name
            for symbol in alt[:-2]:
                link = fresh(name)
                split.setdefault(head, []).append((symbol, link))
                head = link
            split.setdefault(head, []).append(alt[-2:])
    nullable = _nullable(split)
    out: dict[str, list[tuple[str, ...]]] = {}
    for name, alternatives in split.items():
        variants: list[tuple[str, ...]] = []
        for alt in alternatives:
            expanded = [()]
            for symbol in alt:
                expanded = [v + (symbol,) for v in expanded] + ([v for v in expanded] if symbol in nullable else [])
            variants.extend(v for v in expanded if v and v != (name,))
        out[name] = list(dict.fromkeys(variants))
    # a rule left with no alternative derived only the empty text: the variants without it remain
    empty = {name for name, alts in out.items() if not alts}
    out = {name: [alt for alt in alts if not any(s in empty for s in alt)] for name, alts in out.items()
           if name not in empty}
    if start in nullable:
        root = fresh(start)
        out[root] = ([(start,)] if start in out else []) + [()]
        start = root
    return out, start


def _without_unit_cycles(rules: dict, start: str) -> dict:
    """Rules that derive each other through unit alternatives (``a -> b``, ``b -> a``) are one
    rule: the members of each strongly connected component of the unit graph are renamed to
    one of them (the start where it is a member)."""
    edges = {name: [alt[0] for alt in alts if len(alt) == 1 and alt[0] in rules] for name, alts in rules.items()}
    component = _components(edges)
    groups: dict[int, list[str]] = {}
    for name in rules:
        groups.setdefault(component[name], []).append(name)
    rename = {}
    for members in groups.values():
        if len(members) > 1:
            keep = start if start in members else members[0]
            rename.update((m, keep) for m in members)
    if not rename:
        return {name: [alt for alt in alts if alt != (name,)] for name, alts in rules.items()}
    out: dict[str, list[tuple[str, ...]]] = {}
    for name, alternatives in rules.items():
        target = rename.get(name, name)
        merged = out.setdefault(target, [])
        for alt in alternatives:
            alt = tuple(rename.get(s, s) for s in alt)
            if alt != (target,):
                merged.append(alt)
    return {name: list(dict.fromkeys(alts)) for name, alts in out.items()}


def _components(edges: dict) -> dict:
    """Tarjan's strongly connected components, iteratively: name -> component number."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    component: dict[str, int] = {}
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            successors = edges[node]
            if i < len(successors):
                work.append((node, i + 1))
                nxt = successors[i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component[member] = index[node]
                    if member == node:
                        break
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return component


class _Fresh:
    """Names for helper rules that no grammar rule has."""

    def __init__(self, rules: dict):
        self.taken = set(rules)
        self.count = 0

    def __call__(self, base: str) -> str:
        while True:
            self.count += 1
            name = f"{base}~{self.count}"
            if name not in self.taken:
                self.taken.add(name)
                return name
