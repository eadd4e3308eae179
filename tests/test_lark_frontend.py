"""Grammar.from_lark: the IR means what lark means, and bad grammars fail clearly."""

from __future__ import annotations

import os
import random

import lark
import pytest

import gramalign as ga
from gramalign.grammar.lalr import build_parse_table, parse_terminals
from gramalign.grammar.lark_frontend import LarkGrammarError

from support.grammar_walks import lark_accepts

EBNF = r'''
start: item+ ("|" item*)? [";"]
?item: NAME -> named | list | "!" atom
!atom: "x" | "y"
list: "(" _sep{item, ","} ")"
_sep{x, sep}: x (sep x)*
NAME.2: ("a".."c")+
%import common.WS
%ignore WS
'''


def lark_token_sequences(parser: lark.Lark, rng: random.Random, count: int) -> list[list[str]]:
    """Random terminal-name sequences: lexed sentences, and random corruptions of them."""
    names = [t.name for t in parser.terminals if t.name not in parser.ignore_tokens]
    base = [[tok.type for tok in parser.lex(text)] for text in
            ["a b (a, !x, (c)) ;", "abc | ", "(a)", "!y !x a", "a | b c;"]]
    out = []
    for _ in range(count):
        seq = list(rng.choice(base))
        for _ in range(rng.randint(0, 2)):
            position = rng.randrange(len(seq) + 1)
            if rng.random() < 0.5 and seq:
                del seq[min(position, len(seq) - 1)]
            else:
                seq.insert(position, rng.choice(names))
        out.append(seq)
    return out


def lark_accepts_terminals(parser: lark.Lark, names: list[str]) -> bool:
    interactive = parser.parse_interactive("")
    try:
        for name in names:
            interactive.feed_token(lark.Token(name, "?"))
        interactive.feed_eof()
    except lark.exceptions.UnexpectedInput:
        return False
    return True


def test_parse_table_agrees_with_lark_on_terminal_sequences():
    grammar = ga.Grammar.from_lark(EBNF)
    oracle = lark.Lark(EBNF, parser="lalr")
    table = build_parse_table(grammar)
    verdicts = set()
    for seq in lark_token_sequences(oracle, random.Random(0), 300):
        expected = lark_accepts_terminals(oracle, seq)
        assert parse_terminals(table, seq) == expected, seq
        verdicts.add(expected)
    assert verdicts == {True, False}


def test_ir_keeps_lark_terminals_priorities_and_ignores():
    grammar = ga.Grammar.from_lark(EBNF)
    by_name = {t.name: t for t in grammar.terminals}
    assert by_name["NAME"].priority == 2 and not by_name["NAME"].literal
    assert by_name["NAME"].dfa.matches(b"abca") and not by_name["NAME"].dfa.matches(b"abd")
    assert by_name["LPAR"].literal and by_name["LPAR"].dfa.matches(b"(")
    assert grammar.ignore == ("WS",)
    assert "start" in {r.name for r in grammar.rules}


def test_case_insensitive_literals_become_case_insensitive_terminals():
    grammar = ga.Grammar.from_lark('start: "select"i NAME\nNAME: /[a-z]+/\n%ignore " "')
    select = next(t for t in grammar.terminals if t.name == "SELECT")
    assert select.literal and select.dfa.matches(b"SeLeCt") and not select.dfa.matches(b"selec")


@pytest.mark.parametrize("text, message, line", [
    ('start: "a" (\nX: "x"', "Unclosed parenthesis", 1),
    ("start: foo\n", "foo", 1),
    ("start: X\n%declare X\n", "%declare", 2),
    ("start: X\nX: /a*/\n", "empty string", 2),
    ('start: a\na: "x" a\n', "language is empty", 1),
    ("start: X\nX: /a(?=bc)/\n", "lookahead", 2),
    ('start: a | b\na: "x"\nb: "x"\n', "Reduce/Reduce", None),
])
def test_bad_grammars_raise_clear_errors(text, message, line):
    with pytest.raises(ga.GrammarError, match=message) as info:
        ga.Grammar.from_lark(text)
    if line is not None:
        assert isinstance(info.value, LarkGrammarError) and info.value.line == line


def test_missing_start_rule():
    with pytest.raises(ga.GrammarError, match="start rule 'begin'"):
        ga.Grammar.from_lark('start: "a"', start="begin")


def gramalign_accepts(grammar: ga.Grammar, text: str) -> bool:
    from gramalign.grammar.parser_tables import build_parser_tables
    from gramalign.parsing import IncrementalParser

    return IncrementalParser(build_parser_tables(grammar)).accepts(text.encode("utf-8"))


def test_rule_priorities_make_lark_grammars_load_with_larks_language():
    # Go-style: before "(", a name may be an operand (a call) or a type (a conversion);
    # lark settles that reduce/reduce conflict by the rules' priorities
    text = r'''
start: stmt+
stmt: expr ";"
?expr: call | conversion | operand
call: operand "(" NAME ")"
conversion: type "(" NAME ")"
operand.2: NAME
type: NAME | "[" "]" type
NAME: /[a-z]+/
%ignore " "
'''
    oracle = lark.Lark(text, parser="lalr")
    grammar = ga.Grammar.from_lark(text)
    rng = random.Random(3)
    pieces = ["f", "(", ")", "x", ";", "[", "]", " "]
    verdicts = set()
    for sample in ["f(x);", "[]f(x);", "f(x); []g(y);", "f(x)", "(x);"] + [
            "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12))) for _ in range(400)]:
        expected = lark_accepts(oracle, sample)
        assert gramalign_accepts(grammar, sample) == expected, sample
        verdicts.add(expected)
    assert verdicts == {True, False}


TIE_POOL = ["/a+/", "/b+/", "/[ab]+/", "/a[ab]*/", "/[ab]*b/", "/(ab)+/", "/a+b*/", "/ab?/", "/b[ab]?/",
            "/[ab]{2}/", "/[ab]{1,3}/", '"a"', '"b"', '"ab"', '"ba"', '"aa"', '"abab"']


def random_tie_grammar(rng: random.Random) -> str:
    """Terminals over {a, b} that often match the same word; names in random order, so
    that grammar order, name order and lark's width order all disagree somewhere."""
    patterns = rng.sample(TIE_POOL, rng.randint(3, 6))
    names = rng.sample([f"T{i}" for i in range(10)], len(patterns))
    lines = [f"{name}{rng.choice(['', '', '', '.1'])}: {pattern}" for name, pattern in zip(names, patterns)]
    alternatives = [" ".join(rng.choice(names) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(2, 4))]
    return "\n".join(["start: item+", "item: " + " | ".join(alternatives)] + lines + ['%ignore " "']) + "\n"


def lark_first_match_is_whole(parser: lark.Lark, word: str) -> bool:
    """Does every terminal of ``parser`` match either nothing at the start of ``word`` or all
    of it? Then lark's lexer (first terminal in its order that matches) and longest match
    cut the same lexeme in every context, and differ only in which terminal it is."""
    import re

    for terminal in parser.terminals:
        found = re.match(terminal.pattern.to_regexp(), word + " ")
        if found is not None and found.group() != word:
            return False
    return True


@pytest.mark.parametrize("seed", range(60))
def test_ties_between_terminals_go_to_larks_terminal(seed):
    rng = random.Random(seed)
    text = random_tie_grammar(rng)
    try:
        oracle = lark.Lark(text, parser="lalr")
    except lark.exceptions.LarkError:
        return
    grammar = ga.Grammar.from_lark(text)  # whatever lark's LALR accepts must load
    words = {"".join(rng.choice("ab") for _ in range(rng.randint(1, 4))) for _ in range(40)}
    words = sorted(w for w in words if lark_first_match_is_whole(oracle, w))
    if not words:
        return
    # sentences of lark's own lexing of some words, and random word sequences
    for _ in range(150):
        sample = " ".join(rng.choice(words) for _ in range(rng.randint(1, 4)))
        assert gramalign_accepts(grammar, sample) == lark_accepts(oracle, sample), (text, sample)


def test_ties_between_terminals_are_exercised():
    """The random grammars above do put the tie-break to work: on words that every terminal
    matches whole or not at all, grammar order picks another terminal than lark's order."""
    import re

    differing = 0
    for seed in range(60):
        rng = random.Random(seed)
        text = random_tie_grammar(rng)
        parser = lark.Lark(text, parser="lalr", lexer="basic")
        order = sorted(parser.terminals, key=lambda t: (-t.priority, t.pattern.type == "re"))  # stable: grammar order
        for word in ["a", "b", "ab", "ba", "aa", "bb", "abab", "aab", "abb"]:
            if not lark_first_match_is_whole(parser, word):
                continue
            matching = [t.name for t in order if re.fullmatch(t.pattern.to_regexp(), word)]
            if matching:
                differing += matching[0] != next(tok.type for tok in parser.lex(word))
    assert differing >= 20, differing


@pytest.mark.parametrize("text", ["start:\n", "start: a\na:\n", "start: ()\n", "start: a*\na: \"x\"\n",
                                  "start:\n%import common.WS\n%ignore WS\n"])
def test_the_empty_sentence_as_lark_reads_it(text):
    oracle = lark.Lark(text, parser="lalr")
    grammar = ga.Grammar.from_lark(text)
    for sample in ["", " ", "  \n", "x", "xx", "a", " x"]:
        assert gramalign_accepts(grammar, sample) == lark_accepts(oracle, sample), sample


def test_a_grammar_of_the_empty_string_allows_only_eos():
    import numpy as np

    vocab = ga.Vocabulary.from_token_bytes([b"a", b" ", b"x", b"</s>"], eos_token_ids=[3])
    matcher = ga.compile(ga.Grammar.from_lark("start:\n"), vocab).matcher()
    assert matcher.can_terminate()
    bitmask = np.zeros((1, 1), dtype=np.int32)
    matcher.fill_next_token_bitmask(bitmask)
    assert [i for i in range(4) if bitmask[0, 0] >> i & 1] == [3]
    with pytest.raises(ga.TokenRejected):
        matcher.accept_token(0)
    matcher.accept_token(3)
    assert matcher.is_terminated()


def write_grammar_files(folder) -> None:
    (folder / "grammars" / "parts").mkdir(parents=True)
    (folder / "grammars" / "main.lark").write_text(
        'start: pair ("," pair)*\n%import .parts.pairs (pair)\n%import .parts.words.WS\n%ignore WS\n')
    (folder / "grammars" / "parts" / "pairs.lark").write_text(
        'pair: KEY "=" VALUE\n%import .words (KEY, VALUE)\n')  # relative to parts/, not to main's folder
    (folder / "grammars" / "parts" / "words.lark").write_text(
        'KEY: /[a-z]+/\nVALUE: /[0-9]+/ | "true"\nWS: " "+\n')


PAIR_SAMPLES = ["a=1", "a = 1, bc=true", "a=", "=1", "a=1,", "a=true,b=22", "a=1 b=2", "A=1"]


def test_from_lark_file_resolves_imports_like_lark_open(tmp_path, monkeypatch):
    write_grammar_files(tmp_path)
    main = tmp_path / "grammars" / "main.lark"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # relative imports follow the file, not the working directory
    oracle = lark.Lark.open(str(main), parser="lalr")
    for path in (main, str(main), os.path.relpath(main)):
        grammar = ga.Grammar.from_lark_file(path)
        assert [gramalign_accepts(grammar, s) for s in PAIR_SAMPLES] == [lark_accepts(oracle, s) for s in PAIR_SAMPLES]
    with pytest.raises(ga.GrammarError, match="cannot read the grammar file"):
        ga.Grammar.from_lark_file(tmp_path / "grammars" / "nothing.lark")


def test_import_paths_are_searched_as_lark_searches_them(tmp_path):
    write_grammar_files(tmp_path)
    text = 'start: pair+\n%import parts.pairs.pair\n%import parts.words.WS\n%ignore WS\n'
    folders = [str(tmp_path / "nowhere"), str(tmp_path / "grammars")]
    oracle = lark.Lark(text, parser="lalr", import_paths=folders)
    grammar = ga.Grammar.from_lark(text, import_paths=folders)
    samples = PAIR_SAMPLES + ["a=1 b=2 c=true"]
    assert [gramalign_accepts(grammar, s) for s in samples] == [lark_accepts(oracle, s) for s in samples]
    assert ga.Grammar.from_lark_file(tmp_path / "grammars" / "main.lark", import_paths=folders).rules


@pytest.mark.parametrize("pattern, pieces", [
    (r'/".*?"/', ['a', 'b', '"']),
    (r"/\/\*(.|\n)*?\*\//", ["a", "*", "/", "\n", "/*", "*/"]),
    (r"/<<.*?>>/s", ["a", "<", ">", "\n", "<<", ">>"]),
    (r"/#[^\n]*?;/", ["a", "#", ";", "\n"]),
    (r"/z(ab)+?a./", ["z", "ab", "a", "b"]),
    (r"/q.{1,3}?q/", ["a", "q"]),
    (r"/b.*?E/i", ["a", "b", "e", "B", "E"]),
    (r"/'.*?(?:'|!)[0-9]*?;/", ["a", "'", "!", "0", ";"]),
])
def test_lazy_quantifiers_take_larks_first_match(pattern, pieces):
    text = f'start: T "x" T | T\nT: {pattern}\n'
    oracle = lark.Lark(text, parser="lalr")
    grammar = ga.Grammar.from_lark(text)
    rng = random.Random(pattern)
    verdicts = set()
    for _ in range(1500):
        words = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 5))) for _ in range(rng.randint(1, 3))]
        sample = "x".join(words)
        expected = lark_accepts(oracle, sample)
        assert gramalign_accepts(grammar, sample) == expected, sample
        verdicts.add(expected)
    assert verdicts == {True, False}


def test_lazy_block_comments_end_where_larks_do():
    text = 'start: WORD+\nWORD: /[a-z]+/\n%ignore /\\/\\*(.|\\n)*?\\*\\//\n%ignore " "\n'
    oracle = lark.Lark(text, parser="lalr")
    grammar = ga.Grammar.from_lark(text)
    assert lark_accepts(oracle, "a /* x */ b /* y */") and not lark_accepts(oracle, "/* x */ b */")
    rng = random.Random(5)
    pieces = ["a", "b", " ", "/*", "*/", "*", "/", "\n"]
    for _ in range(1500):
        sample = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 10)))
        assert gramalign_accepts(grammar, sample) == lark_accepts(oracle, sample), sample


def agrees_with_lark_on_random_texts(text: str, pieces: list, count: int, longest: int, seed, parser: str = "lalr"):
    """gramalign's verdict equals lark's on ``count`` random concatenations of 1 to
    ``longest`` pieces, and lark both accepts and refuses some of them."""
    oracle = lark.Lark(text, parser=parser)
    grammar = ga.Grammar.from_lark(text, parser=parser)
    rng = random.Random(seed)
    verdicts = set()
    for _ in range(count):
        sample = "".join(rng.choice(pieces) for _ in range(rng.randint(1, longest)))
        expected = lark_accepts(oracle, sample)
        assert gramalign_accepts(grammar, sample) == expected, sample
        verdicts.add(expected)
    assert verdicts == {True, False}


@pytest.mark.parametrize("parser", ["lalr", "earley"])
@pytest.mark.parametrize("pattern", [
    r"a|ab",  # re never takes the second alternative: "ab" is A then B
    r"[0-9]+|[0-9]+\.[0-9]+",  # a number never has a fraction
    r"a+(ab)?",  # a+ starves the optional part: "aab" is "aa" then B
])
def test_greedy_alternatives_take_larks_first_route(pattern, parser):
    agrees_with_lark_on_random_texts(f'start: A B? ("." A)*\nA: /{pattern}/\nB: "b"\n',
                                     ["a", "b", ".", "1", "12", "ab", "aab"], 800, 6, pattern, parser)


@pytest.mark.parametrize("pattern", [
    r'".*?"x+',  # a repeat after the lazy one that can fail: lark's match depends on both
    r"a.*?([bc][bc])*?c",  # first match 'abcc' of 'abcc', shortest 'abc'
    r"""".*?a|".*?b""",  # on '"xbxa' lark takes it all, '"xb' is shorter
    r'"(?:[^"\\]|\\.)*?"',  # SynCode's sql.lark ESCAPED_STRING
])
def test_lazy_quantifiers_whose_first_match_is_not_the_shortest_mean_what_lark_says(pattern):
    """Read by the ordered subset construction (first_match.ordered_first_match_dfa)."""
    agrees_with_lark_on_random_texts(f'start: T+\n%ignore " "\nT: /{pattern}/\n',
                                     ['"', "a", "b", "c", "x", " ", "\\", '"a"', "cc"], 1500, 9, pattern)


@pytest.mark.parametrize("pattern, reason", [
    (r"a.*?$", "anchor"),
    (r"a(?:bb(?=c)|c)*?d", "lookahead"),  # no shape, and the ordered construction reads no lookahead
])
def test_lazy_quantifiers_lark_reads_otherwise_are_refused(pattern, reason):
    text = f'start: T+\n%ignore " "\nT: /{pattern}/\n'
    with pytest.raises(LarkGrammarError, match=f"terminal T: lark takes the first match .*{reason}") as info:
        ga.Grammar.from_lark(text)
    assert info.value.line == 3 and "greedily" in str(info.value)


def test_a_mandatory_indented_block_loads_and_means_what_lark_says():
    """The layout's INDENT/DEDENT are terminals for the productivity check: a rule that
    requires a block was refused as "language is empty" (issue 20, item 6)."""
    from lark.indenter import Indenter

    from gramalign.grammar.parser_tables import build_parser_tables
    from gramalign.parsing import IncrementalParser

    text = ('start: "a" _NEWLINE _INDENT item+ _DEDENT\nitem: "b" _NEWLINE\n'
            '_NEWLINE: /(\\r?\\n[\\t ]*)+/\n%declare _INDENT _DEDENT\n')

    class Layout(Indenter):
        NL_type, OPEN_PAREN_types, CLOSE_PAREN_types = "_NEWLINE", [], []
        INDENT_type, DEDENT_type, tab_len = "_INDENT", "_DEDENT", 8

    oracle = lark.Lark(text, parser="lalr", postlex=Layout())
    parser = IncrementalParser(build_parser_tables(ga.Grammar.from_lark(text, indentation=ga.Indentation())))
    for sample in ["a\n  b\n", "a\nb\n", "a\n    b\n    b\n", "a\n  b\n b\n", "a\n  b\n\n  b\n", "a\n", "a\n  b\n  a\n"]:
        expected = lark_accepts(oracle, sample)
        assert parser.accepts(sample.encode()) == expected, sample


def test_common_escaped_string_loads_and_lexes_as_lark_does():
    """lark's own ESCAPED_STRING (a lookbehind and two lazy repeats) means its first match:
    a quote, anything up to the first quote no odd run of backslashes escapes, no line feed.
    gramalign reads it as that greedy regular form; lark is the oracle on random texts."""
    from gramalign.grammar.parser_tables import build_parser_tables
    from gramalign.parsing import IncrementalParser

    text = ('start: "[" [ESCAPED_STRING ("," ESCAPED_STRING)*] "]"\n'
            '%import common.ESCAPED_STRING\n%import common.WS\n%ignore WS\n')
    oracle = lark.Lark(text, parser="lalr")
    parser = IncrementalParser(build_parser_tables(ga.Grammar.from_lark(text)))
    rng = random.Random(3)
    samples = ['["a"]', '["a\\"b"]', '["a\\\\"]', '["a\\\\\\"b"]', '["a", "b"]', '["a\nb"]', '["\\\n"]', '[]']
    samples += ['[' + "".join(rng.choice('"\\a, \n') for _ in range(rng.randint(0, 9))) + ']' for _ in range(3000)]
    agree = 0
    for sample in samples:
        expected = lark_accepts(oracle, sample)
        assert parser.accepts(sample.encode()) == expected, sample
        agree += expected
    assert agree > 100  # the random texts do hit strings lark accepts
