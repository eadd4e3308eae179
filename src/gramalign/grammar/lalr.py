"""The LALR(1) parse table of a grammar, as plain numpy arrays.

The table is the one lark's analyser (``lark.parsers.lalr_analysis``) builds, so a grammar
means exactly what it means to ``lark.Lark(..., parser="lalr")``: shift/reduce conflicts
are resolved as shift (as lark does; an error for a ``strict`` grammar), a reduce/reduce
conflict goes to the rule of highest priority (:attr:`Rule.priority`) when one is highest,
and is otherwise a :class:`GrammarError` naming the rules. It is computed by the
integer construction of :mod:`.lalr_kernels` (LR(0) item sets, then DeRemer and
Pennello's look-aheads); the tests hold it equal to lark's, state by state.

Action encoding (int32): ``ERROR = 0``; shift to state ``s`` is ``s + 1``; reduce by rule
``r`` is ``-(r + 1)``; ``ACCEPT`` (on ``$END`` only) is the int32 minimum. The table has one
column per terminal and one more, ``DEFAULT`` (the last): empty in an LALR(1) table; in the
table of an :attr:`~gramalign.grammar.grammar.Grammar.lr0` grammar, which has no
look-aheads, the reduction of a state that can only reduce, which the parser makes as soon
as it lands there (so the top of a stack always shifts, and what it can shift is exactly
what may come next). lark accepts when
a reduction on ``$END`` leads to its end state; the table marks that state's ``$END``
action as ACCEPT, so one loop (reduce while negative, then shift or accept) runs the parser.
States are numbered breadth first from ``initial_state`` (0), each state's successors in
column order (terminals, then nonterminals).

A :attr:`~gramalign.grammar.grammar.Grammar.generalized` grammar settles no conflict: a
cell with several actions holds ``FORK + i`` (``FORK`` is ``1 << 30``, above every shift),
where ``goto[i]`` counts its actions and the actions follow it, after the packed goto
entries; the generalized LR runtime (:mod:`gramalign.parsing.stacks`) follows each.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np

from ..errors import GrammarError
from .grammar import Grammar
from .limits import active_limits, check_estimate, check_size, check_time
from .normalize import normalized
from .lalr_kernels import (ACCEPT, FORK, goto_of, lalr_table, lr0_automaton, lr0_table, pack_goto, productive, reduce_loop,
                           rule_defects)

ERROR = 0
END = "$END"
MAX_CONFLICTS = 200_000
"""Competing actions a table may list for judging (repeats included). The shipped grammars and
lark's list none; a random grammar of the fuzzer listed 19 million (460 MB), whose judging
took 18 s and GBs."""


@dataclass(frozen=True, eq=False)
class ParseTable:
    """LALR(1) tables; see the module docstring for the action encoding."""

    terminals: tuple[str, ...]  # column j of ``action``; the last one is "$END"
    nonterminals: tuple[str, ...]  # column k of ``goto``
    action: np.ndarray  # int32 [states, terminals]
    goto: np.ndarray  # int32, packed (see lalr_kernels.pack_goto): read it through goto_of
    rule_lhs: np.ndarray  # int32 [rules]: index into nonterminals
    rule_len: np.ndarray  # int32 [rules]: symbols on the right-hand side
    rule_names: tuple[str, ...]  # "lhs -> a b c", for messages
    initial_state: int
    forks: int = 0  # cells that list several actions (a generalized grammar's conflicts)

    @property
    def num_states(self) -> int:
        return int(self.action.shape[0])

    def terminal_id(self, name: str) -> int:
        return self.terminals.index(name)

    def goto_of(self, state: int, nonterminal: int) -> int:
        """The state after reducing to ``nonterminal`` (a column index) in ``state``; -1
        where undefined."""
        return int(goto_of(self.goto, state, nonterminal))

    def goto_table(self) -> np.ndarray:
        """The goto table unpacked, int32 [states, nonterminals], -1 where undefined (for
        tests and small grammars: dense, it grows as states x rules)."""
        n_states = int(self.goto[0])
        n = int(self.goto[1 + n_states])
        sources = np.repeat(np.arange(n_states), np.diff(self.goto[1:2 + n_states]))
        dense = np.full((n_states, len(self.nonterminals)), -1, dtype=np.int32)
        dense[sources, self.goto[2 + n_states:2 + n_states + n]] = self.goto[2 + n_states + n:2 + n_states + 2 * n]
        return dense


def pack_goto_table(dense: np.ndarray) -> np.ndarray:
    """The packed form (see :class:`ParseTable`) of a dense goto table, -1 where undefined."""
    sources, symbols = np.nonzero(dense >= 0)
    return pack_goto(sources.astype(np.int64), symbols.astype(np.int64), dense[sources, symbols].astype(np.int64),
                     dense.shape[0])


def build_parse_table(grammar: Grammar) -> ParseTable:
    """The LALR(1) table of ``grammar`` (its ignored terminals are not parser symbols).

    A :attr:`~Grammar.generalized` grammar whose table has conflicts (or an alternative
    twice) is first rewritten without empty rules and unit cycles (:mod:`.normalize`, same
    language), and each conflicting cell of the rewritten grammar's table then lists all its
    actions (see the module docstring): nothing is settled."""
    if not grammar.generalized:
        return _table(grammar, _table_arrays(grammar), keep_conflicts=False)
    try:
        built = _table_arrays(grammar)
        if not len(built[3]):
            return _table(grammar, built, keep_conflicts=False)
    except _Duplicated:
        pass
    generalized = normalized(grammar)
    return _table(generalized, _table_arrays(generalized), keep_conflicts=True)


class _Duplicated(GrammarError):
    pass


def _table_arrays(grammar: Grammar) -> tuple:
    """(terminals, nonterminals, the kernel's (action, goto, conflicts, overflow), rule_lhs,
    rule_offsets, productive nonterminals' builder) of ``grammar``'s LALR(1) table."""
    ignored = set(grammar.ignore)
    terminal_names = [t.name for t in grammar.terminals if t.name not in ignored]
    if grammar.indentation is not None:  # made by the lexer from line breaks, not matched
        terminal_names += [grammar.indentation.indent, grammar.indentation.dedent]
    terminals = tuple(terminal_names) + (END,)
    nonterminals = tuple(rule.name for rule in grammar.rules)
    n_terminals = len(terminals)
    # a name that is both stays a terminal; a rule name defined twice means its last column
    nonterminal_ids = {name: n_terminals + k for k, name in enumerate(nonterminals)}
    symbol_ids = dict(nonterminal_ids)
    symbol_ids.update((name, j) for j, name in enumerate(terminal_names))
    alternatives = [alternative for rule in grammar.rules for alternative in rule.alternatives]
    n_rules = len(alternatives)
    rule_offsets = np.zeros(n_rules + 2, dtype=np.int64)  # rule n_rules is "$root -> start"
    np.cumsum(np.fromiter(map(len, alternatives), dtype=np.int64, count=n_rules), out=rule_offsets[1:n_rules + 1])
    n_symbols = int(rule_offsets[n_rules])
    rule_offsets[n_rules + 1] = n_symbols + 1
    rule_symbols = np.empty(n_symbols + 1, dtype=np.int64)
    try:
        rule_symbols[:n_symbols] = np.fromiter(map(symbol_ids.__getitem__, chain.from_iterable(alternatives)),
                                               dtype=np.int64, count=n_symbols)
    except KeyError:
        raise _undefined_symbol(grammar, symbol_ids) from None
    if grammar.start not in nonterminal_ids:
        raise GrammarError(f"the start rule {grammar.start!r} is not defined")
    start_symbol = rule_symbols[n_symbols] = nonterminal_ids[grammar.start]
    root = len(nonterminals)
    rule_nonterminals = (np.arange(root) if len(nonterminal_ids) == root else  # no rule name twice
                         np.array([nonterminal_ids[name] - n_terminals for name in nonterminals], dtype=np.int64))
    rule_lhs = np.empty(n_rules + 1, dtype=np.int64)
    rule_lhs[:n_rules] = np.repeat(rule_nonterminals, [len(rule.alternatives) for rule in grammar.rules])
    rule_lhs[n_rules] = root
    duplicated, undefined = rule_defects(rule_offsets, rule_symbols, rule_lhs, n_terminals, root + 1)
    if duplicated:
        raise _Duplicated("cannot build the LALR(1) table: Rules defined twice")
    if undefined >= 0:  # a rule without alternatives, used (or the start)
        raise GrammarError("cannot build the LALR(1) table: Using an undefined rule: "
                           f"NonTerminal({nonterminals[undefined]!r})")
    # the action table is states x terminals int32 cells: bound the states before building it
    max_states = max(1, active_limits().max_table_bytes // (4 * (n_terminals + 1)))  # and the DEFAULT column
    check_time("the LR(0) automaton")
    automaton = lr0_automaton(rule_offsets, rule_symbols, rule_lhs, n_terminals, root + 1, max_states)
    check_size("max_table_bytes", 4 * (n_terminals + 1) * int(automaton[0]), "the LALR(1) action table",
               f"{int(automaton[0])}{'+' if automaton[0] > max_states else ''} states x ({n_terminals} terminals + 1) "
               "x 4 bytes")
    # the look-ahead kernel runs uninterrupted: ~20 ns per table cell measured (2-core VM,
    # 122k states x 578 terminals in 1.5 s); refuse up front at half that rate
    check_estimate(10e-9 * n_terminals * int(automaton[0]), "the LALR(1) look-aheads")
    if grammar.lr0 and not any(len(alternative) == 0 for alternative in alternatives):
        action, goto, lr0_conflicts = lr0_table(rule_offsets, rule_lhs, n_terminals, *automaton, start_symbol)
        if not lr0_conflicts:
            productive_of = lambda: productive(rule_offsets, rule_symbols, rule_lhs, n_terminals, root + 1)[:root]  # noqa: E731
            return terminals, nonterminals, action, goto, np.empty((0, 3), np.int64), rule_lhs, rule_offsets, productive_of
    action, goto, conflicts, overflow = lalr_table(rule_offsets, rule_symbols, rule_lhs, n_terminals, root + 1,
                                                   *automaton, start_symbol, MAX_CONFLICTS)
    if overflow:
        raise GrammarError(f"the grammar is not LALR(1): its table has more than {MAX_CONFLICTS:,} competing actions "
                           f"({int(automaton[0])} states x {n_terminals} terminals), too many to settle or list")
    productive_of = lambda: productive(rule_offsets, rule_symbols, rule_lhs, n_terminals, root + 1)[:root]  # noqa: E731
    return terminals, nonterminals, action, goto, conflicts, rule_lhs, rule_offsets, productive_of


def _table(grammar: Grammar, built: tuple, keep_conflicts: bool) -> ParseTable:
    terminals, nonterminals, action, goto, conflicts, rule_lhs, rule_offsets, productive_of = built
    n_rules = rule_lhs.shape[0] - 1
    rule_names = tuple(f"{rule.name} -> {' '.join(alternative) or '<empty>'}"
                       for rule in grammar.rules for alternative in rule.alternatives)
    forks = 0
    if len(conflicts) and keep_conflicts:
        goto, forks = _with_forks(action, goto, conflicts)
    elif len(conflicts):
        _judge_conflicts(conflicts, action, terminals, grammar, rule_names)
    table = ParseTable(
        terminals=terminals,
        nonterminals=nonterminals,
        action=action,
        goto=goto,
        rule_lhs=rule_lhs[:n_rules].astype(np.int32),
        rule_len=np.diff(rule_offsets[:n_rules + 1]).astype(np.int32),
        rule_names=rule_names,
        initial_state=0,
        forks=forks,
    )
    if len(conflicts) and not keep_conflicts:  # only a settled conflict can make the parser reduce forever
        _refuse_reduce_loop(table, productive_of())
    return table


def _with_forks(action: np.ndarray, goto: np.ndarray, conflicts: np.ndarray) -> tuple[np.ndarray, int]:
    """(the packed goto table with the fork lists after it, how many cells fork): each
    conflicting cell of ``action`` becomes ``FORK + i``, where ``goto[i]`` is the number of its
    actions and they follow (a shift first, then the reductions by rule number). ``ACCEPT``
    stays where it is: once the end of the text is accepted, nothing else is needed."""
    rules_at: dict = {}
    for state, terminal, rule in conflicts.tolist():
        rules_at.setdefault((state, terminal), set()).add(rule)
    lists: list[int] = []
    forks = 0
    base = goto.shape[0]
    for (state, terminal), rules in sorted(rules_at.items()):
        present = int(action[state, terminal])
        if present == ACCEPT:
            continue
        actions = ([present] if present > 0 else []) + [-(r + 1) for r in sorted(rules)]
        action[state, terminal] = FORK + base + len(lists)
        lists += [len(actions)] + actions
        forks += 1
    if base + len(lists) >= FORK:
        raise GrammarError(f"the generalized LR table is too large: {len(lists):,} fork entries")
    return np.concatenate([goto, np.array(lists, dtype=np.int32)]), forks


def _undefined_symbol(grammar: Grammar, symbol_ids: dict) -> GrammarError:
    for rule in grammar.rules:
        for alternative in rule.alternatives:
            for symbol in alternative:
                if symbol not in symbol_ids:
                    return GrammarError(f"rule {rule.name} uses {symbol!r}, which is neither a rule nor a "
                                        "non-ignored terminal")
    raise AssertionError("no undefined symbol")


def _judge_conflicts(conflicts: np.ndarray, action: np.ndarray, terminals: tuple, grammar: Grammar,
                     rule_names: tuple) -> None:
    """Settle the conflicts as lark's analyser does, or raise where lark refuses: among
    rules reducible on one look-ahead, the one whose priority beats every other's is the
    reduction (``action`` is rewritten to it); equal top priorities are a reduce/reduce
    collision (an error naming the rules). What remains is one reduction against a shift:
    shift wins, as the kernel left it, except in a strict grammar, where it is an error."""
    rules_at: dict = {}
    for state, terminal, rule in conflicts.tolist():
        rules_at.setdefault((state, terminal), set()).add(rule)
    # the root rule ($root -> start, numbered after the grammar's) has no priority, as in lark
    priority = [rule.priority for rule in grammar.rules for _ in rule.alternatives] + [0]

    def lark_rule(r: int) -> str:  # as lark prints a rule
        lhs, rhs = rule_names[r].split(" -> ")
        return f"<{lhs} : {'' if rhs == '<empty>' else rhs}>"

    collisions, shift_reduce = [], []
    for key, rules in sorted(rules_at.items()):
        if len(rules) > 1:
            best, second = sorted((priority[r] for r in rules), reverse=True)[:2]
            if best == second:
                collisions.append("Reduce/Reduce collision in Terminal(%r) between the following rules: %s"
                                  % (terminals[key[1]], "".join("\n\t- " + lark_rule(r) for r in sorted(rules))))
                continue
            rules = {next(r for r in rules if priority[r] == best)}
            if action[key] <= 0:  # no shift here: the preferred reduction is the action
                action[key] = -(next(iter(rules)) + 1)
        if action[key] > 0:
            shift_reduce.append((key, rules))
    if grammar.strict and shift_reduce:
        (_, terminal), (rule,) = shift_reduce[0]
        raise GrammarError(f"cannot build the LALR(1) table: Shift/Reduce conflict for terminal "
                           f"{terminals[terminal]}. [strict-mode]\n * {lark_rule(rule)}")
    if collisions:
        listed = "\n\n".join(collisions)
        raise GrammarError(f"the grammar is not LALR(1): {listed} (make one alternative more specific, or give "
                           "the rules priorities)")


def _usable_gotos(table: ParseTable, derives_text: np.ndarray) -> np.ndarray:
    """One flag per packed goto entry: does it leave a state that input reaches, on a
    nonterminal that ``derives_text``? The table has gotos on rules that derive nothing, and
    states only they lead to, that no input ever takes."""
    n_states = int(table.goto[0])
    n = int(table.goto[1 + n_states])
    offsets = table.goto[1:2 + n_states]
    symbols, targets = table.goto[2 + n_states:2 + n_states + n], table.goto[2 + n_states + n:2 + n_states + 2 * n]
    reached = np.zeros(n_states, dtype=bool)
    reached[table.initial_state] = True
    queue = [table.initial_state]
    for state in queue:
        shifts = table.action[state]
        successors = shifts[shifts > 0] - 1
        entries = slice(int(offsets[state]), int(offsets[state + 1]))
        successors = np.concatenate([successors, targets[entries][derives_text[symbols[entries]]]])
        for successor in successors[~reached[successors]].tolist():
            if not reached[successor]:
                reached[successor] = True
                queue.append(successor)
    sources = np.repeat(np.arange(n_states), np.diff(offsets))
    return reached[sources] & derives_text[symbols]


def _refuse_reduce_loop(table: ParseTable, derives_text: np.ndarray) -> None:
    """Raise a GrammarError naming the rules if some input makes the parser reduce forever
    without reading the next terminal (lark's parser hangs there). ``derives_text``: which
    nonterminals derive some string of terminals."""
    state, nonterminal, terminal = reduce_loop(table.action, table.goto, table.rule_lhs, table.rule_len,
                                               _usable_gotos(table, derives_text))
    if state < 0:
        return
    stack, reduced = [int(state), table.goto_of(int(state), int(nonterminal))], []
    for _ in range(4 * table.num_states):  # enough to go round the loop; names each rule once
        rule = -int(table.action[stack[-1], terminal]) - 1
        if table.rule_names[rule] not in reduced:
            reduced.append(table.rule_names[rule])
        del stack[len(stack) - int(table.rule_len[rule]):]
        stack.append(table.goto_of(stack[-1], int(table.rule_lhs[rule])))
    raise GrammarError(
        f"the parser would reduce forever without reading input: after {table.nonterminals[nonterminal]}, with "
        f"{table.terminals[terminal]} next, it reduces {'; '.join(reduced)} again and again (lark's parser hangs "
        "on it); the conflicts settled by rule priority made the loop: change those priorities, or take the empty "
        "alternative out of the repetition")


def parse_terminals(table: ParseTable, names: list[str]) -> bool:
    """Does the parser accept this terminal sequence? (A plain-Python reference for tests;
    a generalized table's forks are followed breadth first, one set of stacks per terminal.)"""
    stacks = [(table.initial_state,)]
    for name in list(names) + [END]:
        column = table.terminal_id(name)
        shifted, pending, seen = [], [(stack, None) for stack in stacks], set()
        while pending:
            stack, a = pending.pop()
            a = int(table.action[stack[-1], column]) if a is None else a
            if a == ERROR:
                continue
            if a == ACCEPT:
                return True
            if a >= FORK:
                at = a - FORK
                pending += [(stack, int(b)) for b in table.goto[at + 1:at + 1 + int(table.goto[at])]]
                continue
            if a > 0:
                shifted.append(_default_reduced(table, stack + (a - 1,)))
                continue
            rule = -a - 1
            stack = stack[:len(stack) - int(table.rule_len[rule])]
            stack += (table.goto_of(stack[-1], int(table.rule_lhs[rule])),)
            if stack not in seen:
                seen.add(stack)
                pending.append((stack, None))
        stacks = list(dict.fromkeys(shifted))
    return False


def _default_reduced(table: ParseTable, stack: tuple) -> tuple:
    """``stack`` after the default reductions of an LR(0) table (none in an LALR(1) one)."""
    while (a := int(table.action[stack[-1], -1])) < 0:
        rule = -a - 1
        stack = stack[:len(stack) - int(table.rule_len[rule])]
        stack += (table.goto_of(stack[-1], int(table.rule_lhs[rule])),)
    return stack
