# throwaway stand-in for gramalign.grammar.lalr while helper writes the real one
import numpy as np, lark
from dataclasses import dataclass
from lark.grammar import Rule as LRule, NonTerminal, Terminal as LTerminal
from lark.common import ParserConf
from lark.parsers.lalr_analysis import LALR_Analyzer, Shift, Reduce
ERROR=0; ACCEPT=-(2**31)
@dataclass(frozen=True, eq=False)
class ParseTable:
    terminals: tuple; nonterminals: tuple; action: np.ndarray; goto: np.ndarray
    rule_lhs: np.ndarray; rule_len: np.ndarray; rule_names: tuple; initial_state: int
    @property
    def num_states(self): return self.action.shape[0]
def build_parse_table(grammar):
    tnames=[t.name for t in grammar.terminals if t.name not in grammar.ignore]
    nts=[r.name for r in grammar.rules]
    rules=[]
    for r in grammar.rules:
        for alt in r.alternatives:
            rules.append(LRule(NonTerminal(r.name), [LTerminal(s) if s in tnames else NonTerminal(s) for s in alt]))
    conf=ParserConf(rules, {}, [grammar.start])
    an=LALR_Analyzer(conf); an.compute_lalr()
    pt=an.parse_table
    states=sorted(pt.states)
    terms=tuple(tnames)+("$END",)
    action=np.zeros((len(states),len(terms)),np.int32); goto=np.full((len(states),len(nts)),-1,np.int32)
    ridx={id(r):i for i,r in enumerate(rules)}
    for s,acts in pt.states.items():
        for sym,(kind,arg) in acts.items():
            if sym in terms:
                j=terms.index(sym)
                if kind is Shift: action[s,j]=ACCEPT if sym=='$END' else arg+1
                else:
                    if arg.origin.name.startswith('$root'): action[s,j]=ACCEPT
                    else: action[s,j]=-(ridx[id(arg)]+1)
            else:
                goto[s,nts.index(sym)]=arg if kind is Shift else -1
    action[pt.end_states[grammar.start], len(terms)-1] = ACCEPT
    return ParseTable(terms,tuple(nts),action,goto,np.array([nts.index(r.origin.name) for r in rules],np.int32),
        np.array([len(r.expansion) for r in rules],np.int32),tuple(str(r) for r in rules),pt.start_states[grammar.start])
