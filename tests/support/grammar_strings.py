"""Random sentences of a Lark grammar, and hand-written SQL, for oracle and property tests.

``random_strings(grammar_text, start, count, seed)`` derives strings at random from the BNF
that lark builds (``lark.Lark(...).rules``), spells every terminal (string literals with a
random case when they are case-insensitive, regex terminals by a random walk in
gramalign's byte DFA of the regex), joins them with nothing or with ignored lexemes
(whitespace, comments), and keeps only the strings that lark's own LALR parser accepts, so
every result is a sentence of the grammar in lark's sense.

``real_sql_queries()`` returns the statements of ``tests/data/sql/queries.sql``.
"""

from __future__ import annotations

import random
import re
from collections import deque
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import lark
import numpy as np

from gramalign.grammar.automata.regex import regex_to_dfa

__all__ = ["random_strings", "real_sql_queries", "split_sql_statements", "SQL_QUERIES_PATH"]

SQL_QUERIES_PATH = Path(__file__).parent.parent / "data" / "sql" / "queries.sql"

DEFAULT_MAX_DEPTH = 40
"""Derivation depth budget (levels of nonterminals); raised to the grammar's minimum if lower."""

_RECURSIVE_WEIGHT = 0.3  # relative weight of an alternative that re-enters its own rule
_WORD = re.compile(r"\w")


# --------------------------------------------------------------------------- regex sampling


class _DFAWalker:
    """Random walks from the initial state of a trimmed ByteDFA to an accepting state.

    Every state of the DFA can reach acceptance, and the DFA accepts only valid UTF-8, so
    any walk that stops in an accepting state spells a valid string of the language.
    """

    def __init__(self, pattern: str):
        dfa = regex_to_dfa(pattern)
        self.dfa = dfa
        table = dfa.transitions
        n = dfa.num_states
        self.accepting = [bool(a) for a in dfa.accepting]
        # Per state: [(target, printable bytes, all bytes, kind)], kind 0 = has printable
        # ASCII, 1 = ASCII control only, 2 = non-ASCII only.
        self.groups: list[list[tuple[int, np.ndarray, np.ndarray, int]]] = []
        for state in range(n):
            row = table[state]
            groups = []
            for target in sorted(set(int(t) for t in row if t >= 0)):
                all_bytes = np.flatnonzero(row == target)
                printable = all_bytes[(all_bytes >= 0x20) & (all_bytes < 0x7F)]
                if printable.size:
                    kind = 0
                elif (all_bytes < 0x80).any():
                    kind = 1
                else:
                    kind = 2
                groups.append((target, printable, all_bytes, kind))
            self.groups.append(groups)
        # Shortest distance (in bytes) from each state to an accepting state.
        self.distance = [n + 1] * n
        reverse: list[list[int]] = [[] for _ in range(n)]
        for state in range(n):
            for target, *_ in self.groups[state]:
                reverse[target].append(state)
        queue = deque()
        for state in range(n):
            if self.accepting[state]:
                self.distance[state] = 0
                queue.append(state)
        while queue:
            state = queue.popleft()
            for source in reverse[state]:
                if self.distance[source] > self.distance[state] + 1:
                    self.distance[source] = self.distance[state] + 1
                    queue.append(source)

    def sample(self, rng: random.Random, stop: float, max_bytes: int, unicode: float) -> str:
        state = self.dfa.initial
        out = bytearray()
        while True:
            groups = self.groups[state]
            if self.accepting[state] and (not groups or len(out) >= max_bytes or rng.random() < stop):
                break
            if len(out) >= max_bytes:  # head for acceptance by a shortest path
                goal = self.distance[state] - 1
                groups = [g for g in groups if self.distance[g[0]] == goal]
            target, printable, all_bytes, _ = self._pick_group(rng, groups, unicode)
            if printable.size and rng.random() < 0.9:
                byte = int(printable[rng.randrange(printable.size)])
            else:
                byte = int(all_bytes[rng.randrange(all_bytes.size)])
            out.append(byte)
            state = target
        return out.decode("utf-8")

    @staticmethod
    def _pick_group(rng: random.Random, groups, unicode: float):
        weights = []
        n_unicode = sum(1 for g in groups if g[3] == 2)
        for _, _, _, kind in groups:
            if kind == 0:
                weights.append(1.0)
            elif kind == 1:
                weights.append(0.1)
            else:
                weights.append(unicode / n_unicode)
        if sum(weights) <= 0:
            weights = [1.0] * len(groups)
        return rng.choices(groups, weights)[0]


# --------------------------------------------------------------------------- derivation


@dataclass
class _Terminal:
    name: str
    literal: str | None  # the string of a string-literal terminal, else None
    ignorecase: bool
    regexp: str  # Python regex (flags inline) of the terminal


def bnf_alternatives(parser: lark.Lark) -> dict[str, list[tuple[tuple[str, bool], ...]]]:
    """Rule name -> its alternatives as (symbol, is_terminal) tuples, from the BNF lark built;
    sorted, because lark's rule order is not guaranteed across processes."""
    alternatives: dict[str, set] = {}
    for rule in parser.rules:
        alt = tuple((str(sym.name), bool(sym.is_term)) for sym in rule.expansion)
        alternatives.setdefault(str(rule.origin.name), set()).add(alt)
    return {name: sorted(alts) for name, alts in sorted(alternatives.items())}


def min_heights(alternatives: dict[str, list]) -> dict[str, int]:
    """Rule name -> the fewest levels of rules a derivation from it needs (10**9: none ends)."""
    infinity = 10**9
    depth = {name: infinity for name in alternatives}
    changed = True
    while changed:
        changed = False
        for name, alts in alternatives.items():
            for alt in alts:
                height = 1 + max((depth.get(s, infinity) for s, is_term in alt if not is_term), default=0)
                if height < depth[name]:
                    depth[name] = height
                    changed = True
    return depth


class _Generator:
    def __init__(self, grammar_text: str, start: str):
        self.parser = lark.Lark(grammar_text, parser="lalr", start=start)
        self.start = start
        self.alternatives = bnf_alternatives(self.parser)
        if start not in self.alternatives:
            raise ValueError(f"no rule named {start!r} in the grammar")
        self.terminals: dict[str, _Terminal] = {}
        for term in sorted(self.parser.terminals, key=lambda t: t.name):
            pattern = term.pattern
            is_literal = isinstance(pattern, lark.lexer.PatternStr)
            self.terminals[term.name] = _Terminal(
                term.name, pattern.value if is_literal else None, "i" in pattern.flags, pattern.to_regexp())
        self.ignore = sorted(self.parser.ignore_tokens)
        self.spacey = [n for n in self.ignore if re.fullmatch(self.terminals[n].regexp, " ")
                       or re.fullmatch(self.terminals[n].regexp, "\n")]
        self.other_ignore = [n for n in self.ignore if n not in self.spacey]
        self.newline_ok = any(re.fullmatch(self.terminals[n].regexp, "\n") for n in self.spacey)
        self.literal_res = [re.compile(t.regexp) for t in self.terminals.values() if t.literal is not None]
        self._walkers: dict[str, _DFAWalker] = {}
        self.min_depth = min_heights(self.alternatives)
        if self.min_depth[start] >= 10**9:
            raise ValueError(f"rule {start!r} derives no finite string")

    def _height(self, alt) -> int:
        return 1 + max((self.min_depth[s] for s, is_term in alt if not is_term), default=0)

    def derive(self, rng: random.Random, max_depth: int, budget: int, recursive_weight: float,
               growth: float) -> list[str]:
        out: list[str] = []

        def expand(name: str, depth: int) -> None:
            alts = self.alternatives[name]
            heights = [self._height(a) for a in alts]
            remaining = max_depth - depth
            pressure = (depth / max_depth) ** 3
            if len(out) >= budget or rng.random() < pressure:
                best = min(heights)
                choices = [a for a, h in zip(alts, heights) if h == best]
                alt = choices[rng.randrange(len(choices))]
            else:
                choices = [a for a, h in zip(alts, heights) if h <= remaining]
                if not choices:
                    best = min(heights)
                    choices = [a for a, h in zip(alts, heights) if h == best]
                weights = []
                for a in choices:
                    weight = recursive_weight if any(s == name for s, _ in a) else 1.0
                    if len(out) < budget // 2:  # favour structure while the budget lasts
                        weight *= 1.0 + growth * sum(1 for _, is_term in a if not is_term)
                    weights.append(weight)
                alt = rng.choices(choices, weights)[0]
            for symbol, is_term in alt:
                if is_term:
                    out.append(symbol)
                else:
                    expand(symbol, depth + 1)

        expand(self.start, 0)
        return out

    # ------------------------------------------------------------------ spelling

    def walker(self, name: str) -> _DFAWalker:
        walker = self._walkers.get(name)
        if walker is None:
            walker = self._walkers[name] = _DFAWalker(self.terminals[name].regexp)
        return walker

    def spell(self, rng: random.Random, name: str, mood: dict) -> str:
        term = self.terminals[name]
        if term.literal is not None:
            if not term.ignorecase:
                return term.literal
            style = rng.random()
            if style < 0.4:
                return term.literal.upper()
            if style < 0.75:
                return term.literal.lower()
            if style < 0.85:
                return term.literal.capitalize()
            return "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in term.literal)
        text = ""
        for _ in range(20):  # a regex sample spelling a keyword would be retyped by lark
            text = self._sample_regex(rng, name, mood)
            if not any(r.fullmatch(text) for r in self.literal_res):
                break
        return text

    def _sample_regex(self, rng: random.Random, name: str, mood: dict) -> str:
        stop = rng.choices([0.6, 0.3, 0.1, 0.03], [0.4, 0.3, 0.2, 0.1])[0]
        max_bytes = rng.choice([8, 24, 80, 300])
        return self.walker(name).sample(rng, stop, max_bytes, mood["unicode"])

    def ignored(self, rng: random.Random, mood: dict) -> str:
        parts = []
        for _ in range(rng.choices([1, 2, 3], [0.8, 0.15, 0.05])[0]):
            if self.other_ignore and (not self.spacey or rng.random() < mood["comments"]):
                name = self.other_ignore[rng.randrange(len(self.other_ignore))]
                parts.append(self._sample_regex(rng, name, mood))
                if self.newline_ok:
                    parts.append("\n")  # a line comment must not swallow what follows
            elif self.spacey:
                name = self.spacey[rng.randrange(len(self.spacey))]
                stop = rng.choice([0.9, 0.5, 0.2])
                parts.append(self.walker(name).sample(rng, stop, 12, 0.0))
        return "".join(parts)

    def accepts(self, text: str) -> bool:
        try:
            self.parser.parse(text)
        except lark.exceptions.LarkError:
            return False
        return True

    def one(self, rng: random.Random, max_depth: int) -> str | None:
        budget = rng.choices([6, 20, 60, 150], [0.25, 0.35, 0.25, 0.15])[0]
        recursive_weight = rng.choice([0.15, _RECURSIVE_WEIGHT, 0.5])
        growth = rng.choice([0.0, 0.5, 2.0])
        names = self.derive(rng, max_depth, budget, recursive_weight, growth)
        mood = {"unicode": rng.choice([0.0, 0.05, 0.3]), "comments": rng.choice([0.0, 0.1, 0.3])}
        pieces = [self.spell(rng, n, mood) for n in names]
        glue_none = rng.choice([0.0, 0.3, 0.6, 0.9])
        glue = ["" if rng.random() < glue_none or not self.ignore else self.ignored(rng, mood)
                for _ in range(len(pieces) + 1)]
        if rng.random() < 0.6:  # usually no leading / trailing ignored text
            glue[0] = ""
        if rng.random() < 0.6:
            glue[-1] = ""
        if self.accepts(text := self._join(pieces, glue)):
            return text
        if not self.spacey:
            return None
        # Gluing may have merged neighbours into other lexemes (two words, '-' '-', ...):
        # separate them, first only between word characters, then wherever nothing was put,
        # at last everywhere with a plain space.
        for needs_space in (lambda i: _WORD.match(pieces[i - 1][-1:]) and _WORD.match(pieces[i][:1]),
                            lambda i: True):
            glue = [" " if 0 < i < len(pieces) and not glue[i] and needs_space(i) else g
                    for i, g in enumerate(glue)]
            if self.accepts(text := self._join(pieces, glue)):
                return text
        if self.accepts(text := " ".join(pieces)):
            return text
        return None

    @staticmethod
    def _join(pieces: list[str], glue: list[str]) -> str:
        return "".join(g + p for g, p in zip(glue, pieces)) + glue[-1]


@lru_cache(maxsize=16)
def _generator(grammar_text: str, start: str) -> _Generator:
    return _Generator(grammar_text, start)


def random_strings(grammar_text: str, start: str, count: int, seed: int,
                   max_depth: int = DEFAULT_MAX_DEPTH) -> list[str]:
    """``count`` random strings that ``lark.Lark(grammar_text, parser="lalr", start=start)``
    parses; the same arguments always give the same list (independent of hash seeds).

    ``max_depth`` bounds the derivation depth (it is raised to the minimum depth the start
    rule needs); within it, alternatives are drawn at random, recursion less often, and the
    shortest-terminating alternatives are taken once a per-string size budget is spent or,
    increasingly, as the depth grows.
    """
    generator = _generator(grammar_text, start)
    max_depth = max(max_depth, generator.min_depth[start])
    rng = random.Random(seed)
    strings: list[str] = []
    attempts = 0
    while len(strings) < count:
        attempts += 1
        if attempts > 50 * count + 100:
            raise RuntimeError(f"only {len(strings)} of {count} random strings were accepted by lark")
        text = generator.one(rng, max_depth)
        if text is not None:
            strings.append(text)
    return strings


# --------------------------------------------------------------------------- SQL corpus


def split_sql_statements(text: str) -> list[str]:
    """Statements of an SQL script, split at top-level ';' (not inside '...', "...", -- or
    /* */ comments); each is returned stripped and without its ';'. Chunks that are only
    whitespace and comments are dropped."""
    statements = []
    current: list[str] = []
    has_code = False
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "'\"":
            j = i + 1
            while j < n:
                if text[j] == c:
                    if j + 1 < n and text[j + 1] == c:
                        j += 2
                        continue
                    break
                j += 1
            current.append(text[i:j + 1])
            has_code = True
            i = j + 1
        elif text.startswith("--", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            current.append(text[i:j])
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            current.append(text[i:j])
            i = j
        elif c == ";":
            if has_code:
                statements.append("".join(current).strip())
            current, has_code = [], False
            i += 1
        else:
            current.append(c)
            has_code = has_code or not c.isspace()
            i += 1
    if has_code:
        statements.append("".join(current).strip())
    return statements


def real_sql_queries() -> list[str]:
    """The hand-written SQLite statements of tests/data/sql/queries.sql, each ending in ';'."""
    return [statement + ";" for statement in split_sql_statements(SQL_QUERIES_PATH.read_text("utf-8"))]
