"""The reference LALR(1) construction for tests: lark's own analyser.

This is what ``gramalign.grammar.lalr`` ran before its integer construction: lark's
``LALR_Analyzer`` on lark ``Rule`` objects, with two changes that keep its results (NULLABLE
by a worklist instead of lark's FIRST/FOLLOW fixpoint, and :func:`iterative_digraph`,
lark's look-ahead traversal without recursion). :func:`canonical` renumbers any table's
states breadth first, so two constructions can be compared entry by entry.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from lark.common import ParserConf
from lark.exceptions import GrammarError as _LarkError
from lark.grammar import NonTerminal
from lark.grammar import Rule as _LarkRule
from lark.grammar import RuleOptions
from lark.grammar import Terminal as _LarkTerminal
from lark.parsers.grammar_analysis import RulePtr
from lark.parsers.lalr_analysis import LALR_Analyzer, LR0ItemSet, Shift
from lark.utils import classify, fzset

from gramalign.errors import GrammarError
from gramalign.grammar.grammar import Grammar
from gramalign.grammar.lalr import ACCEPT, END, ParseTable, pack_goto_table


def canonical(table: ParseTable) -> ParseTable:
    """``table`` with its states renumbered breadth first from the initial state, each
    state's successors in column order (shifts, then gotos); every state must be reachable."""
    dense_goto = table.goto_table()
    order = [table.initial_state]
    number = {table.initial_state: 0}
    for state in order:
        targets = [a - 1 for a in table.action[state].tolist() if a > 0]
        targets += [g for g in dense_goto[state].tolist() if g >= 0]
        for target in targets:
            if target not in number:
                number[target] = len(order)
                order.append(target)
    assert len(order) == table.num_states, "unreachable states"
    renumber = np.array([number[s] for s in range(table.num_states)], dtype=np.int32)
    action = table.action[order].copy()
    shifts = action > 0
    action[shifts] = renumber[action[shifts] - 1] + 1
    goto = dense_goto[order].copy()
    defined = goto >= 0
    goto[defined] = renumber[goto[defined]]
    return ParseTable(terminals=table.terminals, nonterminals=table.nonterminals, action=action,
                      goto=pack_goto_table(goto),
                      rule_lhs=table.rule_lhs, rule_len=table.rule_len, rule_names=table.rule_names,
                      initial_state=0)


def lark_parse_table(grammar: Grammar, *, shared_sets: bool = True, kernel_includes: bool = True) -> ParseTable:
    """The LALR(1) table of ``grammar`` as lark's analyser computes it, encoded as
    :func:`gramalign.grammar.lalr.build_parse_table` encodes it (lark numbers the states
    in no particular order: compare tables through :func:`canonical`).

    Two flags turn off lark's departures from DeRemer and Pennello, which add look-aheads:
    ``kernel_includes=False``, its ``includes`` relation also walks the kernel items
    ``B -> a . w`` of a state with a transition on B, as if they started there (gramalign
    keeps this one: it shows in LALR(1) grammars too); ``shared_sets=False``, its
    look-ahead traversal starts each Follow set as the very Read set object, which the
    members of a ``reads`` cycle share, so whatever one of them gains the others gain too
    (only in grammars that are not LR(k); gramalign does not share)."""
    ignored = set(grammar.ignore)
    terminal_names = [t.name for t in grammar.terminals if t.name not in ignored]
    if grammar.indentation is not None:  # made by the lexer from line breaks, not matched
        terminal_names += [grammar.indentation.indent, grammar.indentation.dedent]
    terminal_set = set(terminal_names)
    nonterminals = [rule.name for rule in grammar.rules]
    nonterminal_set = set(nonterminals)
    rules, names = [], []
    for rule in grammar.rules:
        for alternative in rule.alternatives:
            expansion = []
            for symbol in alternative:
                if symbol in terminal_set:
                    expansion.append(_LarkTerminal(symbol))
                elif symbol in nonterminal_set:
                    expansion.append(NonTerminal(symbol))
                else:
                    raise GrammarError(f"rule {rule.name} uses {symbol!r}, which is neither a rule nor a "
                                       "non-ignored terminal")
            rules.append(_LarkRule(NonTerminal(rule.name), expansion, order=len(names),
                                   options=RuleOptions(priority=rule.priority or None)))
            names.append(f"{rule.name} -> {' '.join(alternative) or '<empty>'}")
    if grammar.start not in nonterminal_set:
        raise GrammarError(f"the start rule {grammar.start!r} is not defined")
    try:
        analyzer = _Analyzer(ParserConf(rules, {}, [grammar.start]), strict=grammar.strict,
                             shared_sets=shared_sets, kernel_includes=kernel_includes)
        analyzer.compute_lalr()
    except _LarkError as exc:
        message = str(exc).strip()
        if "Reduce/Reduce" in message:
            raise GrammarError(f"the grammar is not LALR(1): {message} (make one alternative more specific, "
                               "or give the rules priorities)") from None
        raise GrammarError(f"cannot build the LALR(1) table: {message}") from None
    table = analyzer.parse_table
    columns = {name: j for j, name in enumerate(terminal_names + [END])}
    goto_columns = {name: k for k, name in enumerate(nonterminals)}
    rule_index = {id(rule): r for r, rule in enumerate(rules)}
    n_states = len(table.states)
    action = np.zeros((n_states, len(columns) + 1), dtype=np.int32)  # and the DEFAULT column, empty in LALR(1)
    goto = np.full((n_states, len(nonterminals)), -1, dtype=np.int32)
    for state, entries in table.states.items():
        for symbol, (kind, argument) in entries.items():
            if symbol in columns:
                if kind is Shift:
                    action[state, columns[symbol]] = argument + 1
                else:
                    action[state, columns[symbol]] = -(rule_index[id(argument)] + 1)
            elif symbol in goto_columns:
                goto[state, goto_columns[symbol]] = argument
    action[table.end_states[grammar.start], columns[END]] = ACCEPT
    return ParseTable(
        terminals=tuple(terminal_names) + (END,),
        nonterminals=tuple(nonterminals),
        action=action,
        goto=pack_goto_table(goto),
        rule_lhs=np.array([goto_columns[rule.origin.name] for rule in rules], dtype=np.int32),
        rule_len=np.array([len(rule.expansion) for rule in rules], dtype=np.int32),
        rule_names=tuple(names),
        initial_state=int(table.start_states[grammar.start]),
    )


class _Analyzer(LALR_Analyzer):
    """lark's LALR(1) analyser without the FIRST and FOLLOW sets, which LALR(1) does not read
    (its look-aheads come from the reads/includes relations; only NULLABLE is used). lark's
    base class computes all three by naive fixpoint iteration, which took a third of the
    table's time on JSON Schema grammars; this is ``GrammarAnalyzer.__init__`` (lark 1.x)
    with NULLABLE computed by a linear worklist instead."""

    def __init__(self, parser_conf: ParserConf, strict: bool = False, shared_sets: bool = True,
                 kernel_includes: bool = True):
        self.shared_sets = shared_sets
        self.kernel_includes = kernel_includes
        self._expansions: dict = {}
        self.debug = False
        self.strict = strict
        root_rules = {start: _LarkRule(NonTerminal("$root_" + start), [NonTerminal(start), _LarkTerminal("$END")])
                      for start in parser_conf.start}
        rules = parser_conf.rules + list(root_rules.values())
        self.rules_by_origin = classify(rules, lambda r: r.origin)
        if len(rules) != len(set(rules)):
            raise _LarkError("Rules defined twice")
        for r in rules:
            for sym in r.expansion:
                if not (sym.is_term or sym in self.rules_by_origin):
                    raise _LarkError(f"Using an undefined rule: {sym}")
        self.start_states = {start: self.expand_rule(root_rule.origin) for start, root_rule in root_rules.items()}
        self.end_states = {start: fzset({RulePtr(root_rule, len(root_rule.expansion))})
                           for start, root_rule in root_rules.items()}
        lr0_root_rules = {start: _LarkRule(NonTerminal("$root_" + start), [NonTerminal(start)])
                          for start in parser_conf.start}
        self.lr0_rules_by_origin = classify(parser_conf.rules + list(lr0_root_rules.values()), lambda r: r.origin)
        self.lr0_start_states = {start: LR0ItemSet([RulePtr(root_rule, 0)],
                                                   self.expand_rule(root_rule.origin, self.lr0_rules_by_origin))
                                 for start, root_rule in lr0_root_rules.items()}
        self.FIRST = self.FOLLOW = None
        self.NULLABLE = _nullable(rules)
        self.nonterminal_transitions = []  # the rest is LALR_Analyzer.__init__
        self.directly_reads = defaultdict(set)
        self.reads = defaultdict(set)
        self.includes = defaultdict(set)
        self.lookback = defaultdict(set)


    def compute_lookaheads(self):
        """lark's ``compute_lookaheads`` with :func:`iterative_digraph` (no recursion) in place
        of its recursive ``digraph``, which overflows Python's stack on long include chains (a
        schema requiring 1,000 keys needs ~950 nested calls)."""
        read_sets = iterative_digraph(self.nonterminal_transitions, self.reads, self.directly_reads)
        if not self.shared_sets:
            read_sets = {x: set(read_sets[x]) for x in self.nonterminal_transitions}
        follow_sets = iterative_digraph(self.nonterminal_transitions, self.includes, read_sets)
        for nonterminal, lookbacks in self.lookback.items():
            for state, rule in lookbacks:
                for symbol in follow_sets[nonterminal]:
                    state.lookaheads[symbol].add(rule)

    def compute_includes_lookback(self):
        """lark's, or without ``kernel_includes`` only the items ``B -> . w`` start the walks
        that find the transitions that include (p, B) (lark also walks p's kernel items of B)."""
        if self.kernel_includes:
            return LALR_Analyzer.compute_includes_lookback(self)
        for nt in self.nonterminal_transitions:
            state, nonterminal = nt
            for rp in state.closure:
                if rp.rule.origin != nonterminal or rp.index != 0:
                    continue
                after = state
                expansion = rp.rule.expansion
                for i, symbol in enumerate(expansion):
                    included = (after, symbol)
                    after = after.transitions[symbol]
                    if included in self.reads and all(s in self.NULLABLE for s in expansion[i + 1:]):
                        self.includes[included].add(nt)
                self.lookback[nt].add((after, rp.rule))

    def expand_rule(self, source_rule, rules_by_origin=None):
        """lark's ``expand_rule``, memoised per nonterminal: ``compute_lr0_states`` asks for
        the same expansions again for every new state (callers only read the result)."""
        key = (source_rule, id(rules_by_origin))
        found = self._expansions.get(key)
        if found is None:
            found = self._expansions[key] = LALR_Analyzer.expand_rule(self, source_rule, rules_by_origin)
        return found


def iterative_digraph(nodes, relation, initial) -> dict:
    """lark's ``digraph`` (DeRemer and Pennello's traversal: F(x) = G(x) united with F(y) for
    every y related to x) with an explicit stack instead of recursion. It performs lark's
    steps in lark's order, sharing set objects exactly as lark does (F(x) starts as G(x)
    itself, a strongly connected component shares one set), so the look-aheads are the same
    sets, quirks included."""
    result: dict = {}
    stack: list = []
    weight = dict.fromkeys(nodes, 0)

    def enter(x, frames) -> None:
        stack.append(x)
        weight[x] = len(stack)
        result[x] = initial[x]
        frames.append([x, len(stack), iter(relation[x]), None])

    def absorb(x, y) -> None:
        if 0 < weight[y] < weight[x]:
            weight[x] = weight[y]
        result[x].update(result[y])

    for root in nodes:
        if weight[root] != 0:
            continue
        frames: list = []
        enter(root, frames)
        while frames:
            frame = frames[-1]
            x, depth, successors, returned_from = frame
            if returned_from is not None:
                frame[3] = None
                absorb(x, returned_from)
            descended = False
            for y in successors:
                if weight[y] == 0:
                    frame[3] = y
                    enter(y, frames)
                    descended = True
                    break
                absorb(x, y)
            if descended:
                continue
            if weight[x] == depth:
                shared = result[x]
                while True:
                    z = stack.pop()
                    weight[z] = -1
                    result[z] = shared
                    if z == x:
                        break
            frames.pop()
    return result


def _nullable(rules) -> set:
    """The nonterminals that derive the empty string (least fixpoint, by a worklist)."""
    remaining = [len(rule.expansion) for rule in rules]
    occurrences: dict = {}
    for index, rule in enumerate(rules):
        for symbol in rule.expansion:
            occurrences.setdefault(symbol, []).append(index)
    nullable = set()
    queue = []
    for index, rule in enumerate(rules):
        if remaining[index] == 0 and rule.origin not in nullable:
            nullable.add(rule.origin)
            queue.append(rule.origin)
    while queue:
        symbol = queue.pop()
        for index in occurrences.get(symbol, ()):
            remaining[index] -= 1
            origin = rules[index].origin
            if remaining[index] == 0 and origin not in nullable:
                nullable.add(origin)
                queue.append(origin)
    return nullable


def input_that_hangs(table: ParseTable, *, max_stacks: int = 5000) -> list[str] | None:
    """Terminal names after which, with one more terminal next, the parser driven by
    ``table`` reduces without end (the last name is that terminal); None if no such input
    is found among the first ``max_stacks`` stacks reached (breadth first). By brute force:
    every stack reached by shifting is tried with every terminal, and a run of reductions
    longer than a generous bound (from the number of states and the stack's depth) is
    taken to hang."""
    dense_goto = table.goto_table()
    bound = 4 * table.num_states * (table.num_states + 2)
    seen = {(table.initial_state,): []}
    queue = [(table.initial_state,)]
    for stack in queue:
        if len(seen) > max_stacks:
            break
        for column, terminal in enumerate(table.terminals):
            current = list(stack)
            for _ in range(bound * (len(stack) + 1)):
                a = int(table.action[current[-1], column])
                if a >= 0 or a == ACCEPT:
                    break
                rule = -a - 1
                del current[len(current) - int(table.rule_len[rule]):]
                current.append(int(dense_goto[current[-1], table.rule_lhs[rule]]))
            else:
                return seen[stack] + [terminal]
            if a > 0 and tuple(current + [a - 1]) not in seen:
                seen[tuple(current + [a - 1])] = seen[stack] + [terminal]
                queue.append(tuple(current + [a - 1]))
    return None
