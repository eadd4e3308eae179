"""Random context-free grammars written as GBNF text (seeded), for the tests of a runtime
that must read any of them (issue 34): small alphabets, a few rules, and in each grammar one
or more of the shapes (:data:`MOTIFS`) an LALR(1) parser cannot read or that trip a generalized one up:
ambiguity, empty alternatives and nullable repetitions, left, right and hidden left recursion,
unit rules and unit cycles, cycles through the empty string, duplicate alternatives, unused and
unproductive rules. The rest of each grammar is random.

Every grammar returned derives at least one non-empty sentence of at most
:data:`SHORTEST_SENTENCE_LIMIT` characters, checked with the Earley oracle of
:mod:`oracles.gbnf` (nothing of gramalign is used here but the GBNF reader's syntax trees).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from gramalign.grammar.gbnf_frontend import parse_gbnf

from .gbnf import earley_verdicts

CHARS = "abcxyz01+(),;."
"""Characters a grammar's alphabet is drawn from: none needs an escape in a literal or a class."""

SHORTEST_SENTENCE_LIMIT = 4

MOTIFS = ("ambiguous", "ambiguous-operator", "empty", "optional-and-star", "left-recursion",
          "right-recursion", "hidden-left-recursion", "unit-cycle", "duplicate-alternatives", "unproductive",
          "unused", "empty-cycle", "palindrome", "nullable-star", "mutual-recursion")
"""The shapes planted in the random grammars (each grammar gets one to three of them)."""

_SLOTS = {"hidden-left-recursion": 2, "unit-cycle": 2, "mutual-recursion": 2}


@dataclass(frozen=True)
class RandomCfg:
    seed: int
    text: str  # GBNF, its first line a comment naming the motifs
    alphabet: str  # the characters the grammar's literals and classes use
    motifs: tuple[str, ...]

    @property
    def rules(self) -> dict:
        return parse_gbnf(self.text)


def random_cfg(seed: int) -> RandomCfg:
    """The grammar of ``seed`` (the same text for the same seed, on every run)."""
    rng = random.Random(f"random-cfg-{seed}")
    while True:
        cfg = _Builder(rng, seed).build()
        verdicts = earley_verdicts(cfg.rules, cfg.alphabet, SHORTEST_SENTENCE_LIMIT)
        if any(accepted for text, (_, accepted) in verdicts.items() if text):
            return cfg


class _Builder:
    def __init__(self, rng: random.Random, seed: int):
        self.rng = rng
        self.seed = seed
        self.alphabet = "".join(rng.sample(CHARS, rng.randint(2, 4)))
        # each seed plants MOTIFS[seed % len(MOTIFS)] first (any run of len(MOTIFS) seeds covers them all)
        self.first = MOTIFS[seed % len(MOTIFS)]
        count = max(rng.randint(2, 6), 1 + _SLOTS.get(self.first, 1))
        # one name with a hyphen and one with a digit, as GBNF allows
        self.names = ["root"] + [rng.choice(("r", "rule-", "x")) + str(i) for i in range(1, count)]
        self.bodies: dict[str, str] = {}
        self.hidden: set[str] = set()  # rules no other rule may refer to (the unused one)
        self.unproductive: list[str] = []  # rules that some other rule must refer to

    # -- pieces ------------------------------------------------------------------------------

    def char(self) -> str:
        return self.rng.choice(self.alphabet)

    def atom(self) -> str:
        """A literal of one or two characters, or a class."""
        roll = self.rng.random()
        if roll < 0.6:
            return '"' + self.char() + '"'
        if roll < 0.8:
            return '"' + self.char() + self.char() + '"'
        chars = sorted(set(self.rng.sample(self.alphabet, self.rng.randint(1, len(self.alphabet)))))
        return "[" + "".join(chars) + "]"

    def ref(self, exclude: str | None = None) -> str:
        names = [n for n in self.names if n not in self.hidden and n != exclude]
        return self.rng.choice(names) if names else self.atom()

    def postfix(self) -> str:
        return self.rng.choice(("?", "*", "+", "{2}", "{0,2}", "{1,3}", "{2,}", "{,2}"))

    def item(self, depth: int) -> str:
        roll = self.rng.random()
        if roll < 0.45:
            return self.atom() + (self.postfix() if self.rng.random() < 0.2 else "")
        if roll < 0.8:
            return self.ref() + (self.postfix() if self.rng.random() < 0.15 else "")
        if depth > 0:
            group = "(" + self.alternatives(depth - 1, most=2) + ")"
            return group + (self.postfix() if self.rng.random() < 0.7 else "")
        return self.atom()

    def sequence(self, depth: int) -> str:
        count = self.rng.choice((0, 1, 1, 2, 2, 2, 3))
        return " ".join(self.item(depth) for _ in range(count)) if count else '""'

    def alternatives(self, depth: int = 1, most: int = 3) -> str:
        return " | ".join(self.sequence(depth) for _ in range(self.rng.randint(1, most)))

    def short(self) -> str:
        """A short non-empty piece: an atom, or two."""
        return self.atom() if self.rng.random() < 0.7 else self.atom() + " " + self.atom()

    # -- motifs ------------------------------------------------------------------------------

    def plant(self, motif: str, names: list[str]) -> None:
        rng, short = self.rng, self.short
        x = names[0]
        y = names[1] if len(names) > 1 else None
        if motif == "ambiguous":
            body = f"{x} {x} | {short()}"
        elif motif == "ambiguous-operator":
            body = f"{x} {self.atom()} {x} | {short()}"
        elif motif == "empty":
            # an empty alternative spelled the three ways GBNF allows
            way = rng.randrange(3)
            body = (f"| {short()} {x}" if way == 0 else f'"" | {x} {short()}' if way == 1
                    else f"{short()} | ({self.atom()})?")
        elif motif == "optional-and-star":
            body = f"{self.atom()}? {self.atom()}* ({self.atom()} | {self.ref(exclude=x)})+"
        elif motif == "left-recursion":
            body = f"{x} {short()} | {short()}"
        elif motif == "right-recursion":
            body = f"{short()} {x} | {short()}"
        elif motif == "hidden-left-recursion":
            body = f"{y} {x} {self.atom()} | {short()}"
            self.bodies[y] = rng.choice((f'"" | {short()}', f"{self.atom()}?", f"{self.atom()}*", f"| {y} {short()}"))
        elif motif == "unit-cycle":
            body = f"{y} | {short()}"
            self.bodies[y] = rng.choice((x, f"{x} | {short()}", f"{x} | {x}"))
        elif motif == "duplicate-alternatives":
            alt = self.sequence(1)
            body = f"{alt} | {short()} | {alt}"
        elif motif == "unproductive":
            body = rng.choice((f"{x} {short()}", f"{short()} {x} | {x} {x}", f"{short()} ({x})+"))
            self.unproductive.append(x)
        elif motif == "unused":
            body = self.alternatives()
            self.hidden.add(x)
        elif motif == "empty-cycle":  # x derives x x and the empty string: infinitely many trees
            body = f"{x} {x} | \"\" | {short()}"
        elif motif == "palindrome":
            a = self.atom()
            body = f"{a} {x} {a} | {short()} | \"\""
        elif motif == "nullable-star":  # a repetition of something that may be empty
            body = rng.choice((f"({self.atom()}?)* {self.atom()}", f"({self.atom()}* | {self.atom()})+",
                               f"({self.atom()}?){{2,}}"))
        else:
            assert motif == "mutual-recursion"
            body = f"{self.atom()} {y} | {short()}"
            self.bodies[y] = f"{x} {self.atom()} | {x} {y} | {short()}"
        self.bodies[x] = body

    # -- the grammar -------------------------------------------------------------------------

    def build(self) -> RandomCfg:
        rng = self.rng
        others = self.names[1:]
        rng.shuffle(others)
        wanted = [self.first] + rng.sample([m for m in MOTIFS if m != self.first], rng.randint(0, 2))
        wanted.sort(key=lambda m: m != "unused")  # hidden before any other rule's body is written
        planted, heads = [], []
        for motif in wanted:
            slots = _SLOTS.get(motif, 1)
            if motif == "unused" and not others:
                continue
            if len(others) >= slots:
                names, others = others[:slots], others[slots:]
            elif slots == 1 and not planted and motif not in ("unused", "unproductive"):
                names = ["root"]  # no rule left: the root itself is the motif
                others = []
            else:
                continue
            self.plant(motif, names)
            planted.append(motif)
            heads.append(names)
        if not planted:  # every motif wanted more rules than there were: plant a one-rule one at the root
            motif = rng.choice([m for m in MOTIFS if _SLOTS.get(m, 1) == 1 and m not in ("unused", "unproductive")])
            self.plant(motif, ["root"])
            planted.append(motif)
        for name in others:
            self.bodies[name] = self.alternatives()
        if "root" not in self.bodies:
            # the root refers to every planted rule (so their shapes are in play), maybe to others
            heads = [names[0] for names in heads if names[0] not in self.hidden]
            heads += [n for n in others if rng.random() < 0.3]
            alternatives = [" ".join([n] + ([self.item(1)] if rng.random() < 0.4 else [])) for n in heads]
            alternatives += [self.sequence(1) for _ in range(rng.randint(0, 1))]
            self.bodies["root"] = " | ".join(alternatives) if alternatives else self.alternatives()
        for name in self.unproductive:
            # another rule refers to the unproductive one in an alternative of its own
            referrers = [n for n in self.names if n != name and n not in self.hidden]
            if referrers:
                referrer = rng.choice(referrers)
                self.bodies[referrer] += f" | {self.short()} {name}"
        lines = [f"# seed {self.seed}: {', '.join(planted)}"]
        lines += [f"{name} ::= {self.bodies[name]}" for name in self.names]
        return RandomCfg(self.seed, "\n".join(lines) + "\n", self.alphabet, tuple(planted))
