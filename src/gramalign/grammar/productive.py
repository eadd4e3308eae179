"""Which nonterminals derive some text, proved on demand over rules that arrive on demand.

An alternative that can never derive a string of terminals (an empty value set, a key no
object may have) must not be offered to the parser: a token that enters it would be a dead
end. An eager grammar drops such alternatives once, by a least fixpoint over all rules. Over
rules emitted on demand, :class:`ProductiveRules` proves a nonterminal productive by expanding
only what the proof needs: it keeps the fixpoint's worklist (each alternative waits on its
nonterminals not yet proved) across queries, and a query expands, breadth first, the
unexpanded nonterminals of its still unproven alternatives until the nonterminal is proved;
where nothing is left to expand, every nonterminal it reaches that is not proved is refuted
(its whole derivation graph is known, so the fixpoint is final there).
"""

from __future__ import annotations

from collections import deque

from .lr0_lazy import RuleSource


DEPTH_FIRST_EXPANSIONS = 64
"""Rules one depth-first attempt at a proof may expand before the breadth-first search decides."""


class ProductiveRules:
    """A rule source (see :mod:`.lr0_lazy`) that offers only alternatives deriving some text."""

    def __init__(self, source: RuleSource):
        self._source = source
        self._rules: dict[str, tuple[tuple[str, ...], ...]] = {}
        self._proved: set[str] = set()
        self._refuted: set[str] = set()
        self._waiting: dict[str, list[list]] = {}  # nonterminal -> alternatives waiting on it
        self._kept: dict[str, tuple[tuple[str, ...], ...]] = {}
        self._shown = getattr(source, "derives_text", None)  # a source's own cheap proof, if it has one
        self._not_shown: set[str] = set()

    def is_terminal(self, name: str) -> bool:
        return self._source.is_terminal(name)

    def _expand(self, name: str) -> None:
        if name in self._rules:
            return
        alternatives = self._rules[name] = tuple(self._source.alternatives(name) or ())
        for alternative in alternatives:
            unproved = {s for s in alternative if s not in self._proved and not self._source.is_terminal(s)}
            if not unproved:
                self._prove(name)
                continue
            cell = [len(unproved), name]
            for symbol in unproved:
                self._waiting.setdefault(symbol, []).append(cell)

    def _prove(self, name: str) -> None:
        queue = [name]
        while queue:
            symbol = queue.pop()
            if symbol in self._proved:
                continue
            self._proved.add(symbol)
            for cell in self._waiting.pop(symbol, ()):
                cell[0] -= 1
                if cell[0] == 0 and cell[1] not in self._proved:
                    queue.append(cell[1])

    def _hinted(self, name: str) -> bool:
        """Proved by the source's ``derives_text`` (sound, or the source is wrong), without
        expanding anything; the proof reaches what waits on ``name``."""
        if self._shown is None or name in self._not_shown:
            return False
        if not self._shown(name):
            self._not_shown.add(name)
            return False
        self._prove(name)
        return True

    def productive(self, name: str) -> bool:
        """Does ``name`` (a terminal or a nonterminal) derive some string of terminals?"""
        if name in self._proved or self._source.is_terminal(name):
            return True
        if name in self._refuted:
            return False
        if self._hinted(name):
            return True
        # First one derivation, depth first, the alternative with fewest unproved symbols
        # first: a union of objects with required members is proved along one member chain,
        # where a breadth-first search expanded every member's value at every level.
        budget = [DEPTH_FIRST_EXPANSIONS]
        if self._derivation(name, set(), budget):
            return True
        seen, frontier = {name}, deque([name])
        while frontier:
            symbol = frontier.popleft()
            self._expand(symbol)
            if name in self._proved:
                return True
            for alternative in self._rules[symbol]:
                for s in alternative:
                    if s not in seen and s not in self._proved and s not in self._refuted \
                            and not self._source.is_terminal(s):
                        seen.add(s)
                        frontier.append(s)
        # everything ``name`` reaches is expanded: what is not proved there never will be
        self._refuted.update(s for s in seen if s not in self._proved)
        return name in self._proved

    def _derivation(self, name: str, path: set, budget: list) -> bool:
        """Try to prove ``name`` along one derivation (depth first, at most ``budget[0]`` more
        expansions). Proofs come from the worklist, so this is sound; a failure proves nothing
        (a symbol on ``path`` counts as unproved), and the breadth-first search decides."""
        if name in self._proved:
            return True
        if name in path or name in self._refuted or budget[0] <= 0:
            return False
        if self._hinted(name):
            return True
        if name not in self._rules:
            budget[0] -= 1
            self._expand(name)
            if name in self._proved:
                return True
        path.add(name)
        is_terminal = self._source.is_terminal
        proved = self._proved
        ranked = sorted(self._rules[name], key=lambda a: sum(s not in proved and not is_terminal(s) for s in a))
        for alternative in ranked:
            if all(self._derivation(s, path, budget) for s in alternative if not is_terminal(s)):
                break
            if budget[0] <= 0:
                break
        path.discard(name)
        return name in self._proved

    def alternatives(self, name: str) -> "tuple[tuple[str, ...], ...] | None":
        """``name``'s alternatives whose every symbol is productive; None for a terminal."""
        if self._source.is_terminal(name):
            return None
        found = self._kept.get(name)
        if found is None:
            self._expand(name)
            found = self._kept[name] = tuple(a for a in self._rules[name] if all(map(self.productive, a)))
        return found
