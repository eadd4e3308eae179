"""The shipped grammars (json.lark, sql.lark) against their oracles, the random sentence
generator of support/grammar_strings.py, and -- most importantly -- that lark's
contextual lexer and gramalign's longest-match lexing agree on every string tried.

Oracles: RFC 8259 is ``json.loads`` minus its NaN/Infinity extension; the SQL corpus is
tests/data/sql/queries.sql; the language of a grammar is lark's LALR parser's.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import sysconfig
from functools import lru_cache
from pathlib import Path

import lark
import pytest
from lark.lexer import PatternStr
from lark.parsers.lalr_analysis import Shift

from gramalign.errors import GrammarError
from gramalign.grammar.builtin import BUILTIN_GRAMMARS, BUILTIN_LAYOUTS, builtin_grammar_text, load_builtin
from gramalign.grammar.automata.regex import regex_to_dfa

from support.grammar_strings import SQL_QUERIES_PATH, random_strings, real_sql_queries, split_sql_statements
from support.grammar_walks import lark_accepts as lark_parser_accepts
from support.lark_terminals import lexeme_dfa

TESTS = Path(__file__).parent


@lru_cache(maxsize=None)
def lark_parser(name: str) -> lark.Lark:
    return lark.Lark(builtin_grammar_text(name), parser="lalr", start=BUILTIN_GRAMMARS[name])


def lark_accepts(name: str, text: str) -> bool:
    return lark_parser_accepts(lark_parser(name), text)


def rfc_json_valid(text: str) -> bool:
    def no_constants(name):
        raise ValueError(f"{name} is not RFC 8259 JSON")

    try:
        json.loads(text, parse_constant=no_constants)
    except ValueError:  # JSONDecodeError is a ValueError
        return False
    return True


WITHOUT_LAYOUT = sorted(set(BUILTIN_GRAMMARS) - set(BUILTIN_LAYOUTS))
"""Grammars whose sentences lark parses without a post-lexer (the Python grammar's
indentation has its own oracle: tests/oracles/python_layout.py, test_python_grammar*.py)."""


@lru_cache(maxsize=None)
def generated(name: str, count: int, seed: int) -> tuple[str, ...]:
    return tuple(random_strings(builtin_grammar_text(name), BUILTIN_GRAMMARS[name], count, seed=seed))


# --------------------------------------------------------------------------- grammar files


@pytest.mark.parametrize("name", sorted(BUILTIN_GRAMMARS))
def test_grammar_is_conflict_free_lalr(name):
    """lark's strict mode rejects shift/reduce and reduce/reduce conflicts and regex
    terminals that can match the same text."""
    lark.Lark(builtin_grammar_text(name), parser="lalr", start=BUILTIN_GRAMMARS[name], strict=True)


@pytest.mark.parametrize("name", sorted(BUILTIN_GRAMMARS))
def test_grammar_file_documents_coverage_and_uses_no_priorities(name):
    text = builtin_grammar_text(name)
    header = []
    for line in text.splitlines():
        if not line.startswith("//"):
            break
        header.append(line)
    assert len(header) >= 5
    assert any("Leaves out" in line for line in header)
    parser = lark_parser(name)
    assert all(t.priority == 0 for t in parser.terminals)
    for t in parser.terminals:  # every regex is one our engine compiles
        lexeme_dfa(t.pattern.to_regexp())


def test_unknown_builtin_lists_available_names():
    with pytest.raises(GrammarError, match="'json', 'python', 'sql'"):
        builtin_grammar_text("xml")
    with pytest.raises(GrammarError, match="available"):
        load_builtin("yaml")


@pytest.mark.parametrize("name", sorted(BUILTIN_GRAMMARS))
def test_load_builtin(name):
    grammar = load_builtin(name)
    assert grammar.start == BUILTIN_GRAMMARS[name]
    assert load_builtin(name) is grammar  # cached
    parser = lark_parser(name)
    named = {t.name for t in parser.terminals if not t.name.startswith("__") and t.name.isupper()}
    named &= set(re.findall(r"^([A-Z_]+):", builtin_grammar_text(name), re.MULTILINE))  # defined in the file
    assert named and named <= set(grammar.terminal_names)
    assert set(grammar.ignore) == set(parser.ignore_tokens)


# --------------------------------------------------------------------------- JSON


INVALID_JSON = [
    "", " ", "[1,]", "[1,,2]", "[,1]", '{"a":1,}', '{"a" 1}', '{"a":}', "{a:1}", "{'a':1}", "'x'",
    "01", "-01", "00", "+1", "1.", ".5", "1e", "1e+", "-", "--1", "0x10", "1_000", "1.5.2",
    "NaN", "Infinity", "-Infinity", "nan", "[NaN]", '{"x": Infinity}', "True", "None", "nul",
    "truex", "true false", "[1 2]", '"abc', 'abc"', '"\\x41"', '"\\a"', '"\\U0041"', '"\\u12"',
    '"\\u12G4"', '"\\\'"', '"a\x00b"', '"a\x1fb"', '"tab\there"', '"new\nline"', "[1]]", "[[1]",
    "{}}", "\ufeff{}", "\u00a0[]", "[]\u2028", "\x0b1", "/* c */ 1", "1 // c", "[1]\x00",
    '{"a":1 "b":2}', "[true,false,null,]", '["a" "b"]', '{"a":1}{"b":2}', "[\"\\\"]",
]

VALID_JSON = [
    "0", "-0", "1", "-1.5e-10", "1E400", "0.000", "123456789012345678901234567890", '""', '"\\u0000"',
    '"\\uD83D\\uDE00"', '"\\uDEAD"', '"\\/\\b\\f\\n\\r\\t\\"\\\\"', '"\x7f"', '"Zoë 日本 😀"', " \t\n\r[] \n",
    '{"":{"":{"":[[[[]]]]}}}', '[1, "a", true, false, null, {"k": [-0.0e+0]}]', '{"a":1,"a":2}',
]


def test_json_hand_written_strings_agree_with_rfc():
    for text in VALID_JSON:
        assert rfc_json_valid(text), text
        assert lark_accepts("json", text), text
    for text in INVALID_JSON:
        assert not rfc_json_valid(text), text
        assert not lark_accepts("json", text), text


def test_json_generated_strings_are_rfc_json():
    texts = generated("json", 400, 11)
    for text in texts:
        assert rfc_json_valid(text), text


MUTATION_CHARS = list('{}[],:"\\-+.eE0123456789 tfnrulsaxX/\x00\x1f\x7f\t\n\r\u00e9\u2028\ufeff\'') + ["\\u", "NaN"]


SQL_MUTATION_CHARS = list("();,.*=<>!|+-/%~?:@$'\"_ \n\t0123456789aeEnotxX\u00e9") + [
    "--", "/*", "*/", "||", "<>", "<=", "or", "and", "in", "not", "is", " select ", " from ", "null", "1e",
    "0x", ".5", "''", '""', "key", "as", "on", "by", "e1", "case", "end",
]


def mutants(text: str, rng: random.Random, count: int, chars: list[str] = MUTATION_CHARS) -> list[str]:
    """Random one-place edits: delete, insert or replace a character (or a short string)."""
    out = []
    for _ in range(count):
        pos = rng.randrange(len(text) + 1)
        kind = rng.random()
        if kind < 0.4 and pos < len(text):
            out.append(text[:pos] + text[pos + 1:])
        elif kind < 0.8:
            out.append(text[:pos] + rng.choice(chars) + text[pos:])
        elif pos < len(text):
            out.append(text[:pos] + rng.choice(chars) + text[pos + 1:])
    return out


def test_json_mutated_strings_agree_with_rfc():
    rng = random.Random(5)
    checked = invalid = 0
    for text in generated("json", 400, 11)[:250]:
        for mutant in mutants(text, rng, 4):
            verdict = rfc_json_valid(mutant)
            assert lark_accepts("json", mutant) == verdict, mutant
            checked += 1
            invalid += not verdict
    assert checked > 800 and invalid > 200


def json_files_on_this_machine(limit_per_root: int = 25, max_bytes: int = 200_000) -> list[Path]:
    """A deterministic sample of small *.json files from the stdlib and site-packages."""
    paths = sysconfig.get_paths()
    roots = [Path(paths["purelib"]), Path(paths["stdlib"])]
    chosen: list[Path] = []
    for root in dict.fromkeys(roots):
        found = []
        for directory, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for filename in sorted(filenames):
                path = Path(directory, filename)
                if filename.endswith(".json") and path.is_file() and path.stat().st_size <= max_bytes:
                    found.append(path)
            if len(found) >= 2000:
                break
        found = [p for p in found if p not in chosen]
        chosen += random.Random(str(root)).sample(found, min(limit_per_root, len(found)))
    return chosen


def test_json_files_on_this_machine():
    files = json_files_on_this_machine()
    assert len(files) >= 10, files
    checked = 0
    for path in files:
        try:
            text = path.read_text("utf-8")
        except UnicodeDecodeError:
            continue
        assert lark_accepts("json", text) == rfc_json_valid(text), path
        checked += 1
    assert checked >= 10


# --------------------------------------------------------------------------- SQL


INVALID_SQL = [
    "", ";", "select", "select 1;;", "; select 1", "select a,", "select a from", "select * from t where",
    "selec 1", "select 1 1", "select 'abc", "select \"abc", "select a from t order by", "select (1",
    "select 1)", "select a from t limit", "select a from t group by", "select * from t join u on",
    "insert into t values", "insert into t (a) values (1", "insert t values (1)", "update t set",
    "update t set a", "delete t", "delete from", "create table t ()", "create table t (a,)",
    "create table (a int)", "drop table", "select * from t where a = = 1", "select * from t where a not",
    "select case when a then 1", "select cast(a)", "select cast(a as)", "select count(distinct)",
    "select * from t where a between 1", "select * from t where a in", "select 1 union",
    "with c as (select 1)", "with c as select 1 select * from c", "select a as from t",
    "select t.* as x from t", "select * from t left right join u", "select * from t cross join u using",
    "select a from t where a is", "select 1 -- comment only\n,", "select /* unterminated 1",
    "select a from t limit 1 offset", "select @ from t", "select a from t where a != ! 1",
    "select x from t where not", "select 1 + * 2", "select a from (select)", "SELECT FROM WHERE",
    "select * from t where a like", "select a from t where a = 1 b", "select 1 order by 1 asc desc",
    "select a from t where exists t", "select a b c from t", "select * from t u v", "select 1 limit 1 limit 2",
]

# Lexing is contextual: where no keyword fits, a word spelling one is an identifier.
KEYWORDS_AS_IDENTIFIERS = [
    "SELECT FROM t", "select a from select", "select key from t where primary = 1",
    "select where from from where where = where", "create table select (from int)",
]


def test_sql_corpus_parses():
    queries = real_sql_queries()
    assert len(queries) >= 60
    for query in queries:
        assert lark_accepts("sql", query), query
    assert lark_accepts("sql", SQL_QUERIES_PATH.read_text("utf-8"))  # the whole script at once
    assert len(set(queries)) == len(queries)


def test_sql_corpus_covers_the_dialect():
    text = SQL_QUERIES_PATH.read_text("utf-8")
    upper = " ".join(text.upper().split())
    features = [
        "SELECT DISTINCT", "SELECT ALL", ".*", " AS ", "COUNT(*)", "COUNT(DISTINCT", " INNER JOIN ",
        " LEFT JOIN ", " LEFT OUTER JOIN ", " CROSS JOIN ", " NATURAL JOIN ", " USING (", " ON ",
        " IN (SELECT", "EXISTS (SELECT", "NOT EXISTS", "WITH RECURSIVE", "WITH ", " WHERE ",
        " GROUP BY ", " HAVING ", " ORDER BY ", " ASC", " DESC", " LIMIT ", " OFFSET ", " UNION ",
        " UNION ALL ", " INTERSECT ", " EXCEPT ", "INSERT INTO", " VALUES ", "INSERT OR REPLACE",
        "DEFAULT VALUES", "RETURNING", "UPDATE ", " SET ", "DELETE FROM", "CREATE TABLE",
        "IF NOT EXISTS", "PRIMARY KEY", "NOT NULL", "UNIQUE", "DEFAULT '", "REFERENCES", "FOREIGN KEY",
        "AUTOINCREMENT", "CHECK (", "CREATE INDEX", "CREATE UNIQUE INDEX", "CREATE VIEW", "DROP TABLE",
        "CASE WHEN", "CASE DEPARTMENT_ID WHEN", " ELSE ", " END", "CAST(", "||", " % ", " <> ", " != ",
        " == ", " <= ", " >= ", " IS NULL", " IS NOT NULL", " NOT IN (", " BETWEEN ", " NOT BETWEEN ",
        " LIKE ", " NOT LIKE ", " ESCAPE ", " GLOB ", " COLLATE ", " OVER (PARTITION BY", "FILTER (WHERE",
        " AND ", " OR ", " NOT ", "NULL", "TRUE", "FALSE", "CURRENT_TIMESTAMP", "''", "= ?", "?1",
        ":DEPT", "@PRODUCT", "$TOKEN", "0X", "E+", "(SELECT", "-- ", "/*",
    ]
    missing = [f for f in features if f not in upper]
    assert not missing, missing
    assert re.search(r"\bselect\b", text) and re.search(r"\bSELECT\b", text) and re.search(r"\bSeLeCt\b", text)


def test_sql_invalid_statements_are_rejected():
    accepted = [q for q in INVALID_SQL if lark_accepts("sql", q)]
    assert not accepted, accepted


def test_sql_keywords_are_identifiers_where_no_keyword_fits():
    for query in KEYWORDS_AS_IDENTIFIERS:
        assert lark_accepts("sql", query), query
        assert longest_match_verdict("sql", query), query


def test_split_sql_statements():
    script = "select ';' as x; -- a ; comment\nselect \"a;b\" /* ; */ from t;\n-- only a comment\n;"
    assert split_sql_statements(script) == ["select ';' as x", '-- a ; comment\nselect "a;b" /* ; */ from t']


def render(tree) -> str:
    """A parse tree of an expression as a fully parenthesised string of its tokens."""
    if isinstance(tree, lark.Token):
        return str(tree)
    parts = [render(child) for child in tree.children if child is not None]
    if tree.data == "concat":  # its anonymous "||" is filtered out of the tree
        parts.insert(1, "||")
    return parts[0] if len(parts) == 1 else "(" + " ".join(parts) + ")"


@pytest.mark.parametrize("expression, expected", [
    ("a OR b AND c", "(a OR (b AND c))"),
    ("a AND b OR c", "((a AND b) OR c)"),
    ("NOT a = b AND c", "((NOT (a = b)) AND c)"),
    ("NOT a OR b", "((NOT a) OR b)"),
    ("a = 1 OR NOT b IS NULL", "((a = 1) OR (NOT (b IS NULL)))"),
    ("1 + 2 * 3", "(1 + (2 * 3))"),
    ("1 - 2 - 3", "((1 - 2) - 3)"),
    ("a || b * c", "((a || b) * c)"),
    ("-a * b", "((- a) * b)"),
    ("a < b = c", "((a < b) = c)"),
    ("a + 1 BETWEEN 1 AND 2 AND c", "(((a + 1) BETWEEN 1 AND 2) AND c)"),
    ("a NOT IN (1, 2) OR b LIKE 'x'", "((a NOT IN (1 2)) OR (b LIKE 'x'))"),
    ("x COLLATE nocase || y", "((x COLLATE nocase) || y)"),
])
def test_sql_expression_precedence(expression, expected):
    tree = lark_parser("sql").parse(f"SELECT {expression}")
    (expr,) = tree.find_pred(lambda t: t.data == "result_column")
    assert render(expr.children[0]) == expected


def test_sql_generated_strings_parse():
    for text in generated("sql", 300, 3):
        assert lark_accepts("sql", text), text


# --------------------------------------------------------------------------- generator


@pytest.mark.parametrize("name", WITHOUT_LAYOUT)
def test_generator_is_deterministic(name):
    text = builtin_grammar_text(name)
    start = BUILTIN_GRAMMARS[name]
    first = random_strings(text, start, 30, seed=42)
    assert first == random_strings(text, start, 30, seed=42)
    assert first != random_strings(text, start, 30, seed=43)
    assert len(first) == 30 and all(lark_accepts(name, s) for s in first)


def test_generator_is_deterministic_across_hash_seeds():
    script = ("import sys; sys.path.insert(0, sys.argv[1]); from support.grammar_strings import random_strings; "
              "from gramalign.grammar.builtin import builtin_grammar_text as t; "
              "print(repr(random_strings(t('sql'), 'start', 8, seed=9) + random_strings(t('json'), 'value', 8, seed=9)))")
    outputs = set()
    for hash_seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        result = subprocess.run([sys.executable, "-c", script, str(TESTS)], env=env, capture_output=True,
                                text=True, check=True, timeout=120)
        outputs.add(result.stdout)
    assert len(outputs) == 1


def lark_token_types(name: str, text: str) -> list[str]:
    interactive = lark_parser(name).parse_interactive(text)
    types = [token.type for token in interactive.iter_parse()]
    interactive.feed_eof()
    return types


def json_depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max((json_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((json_depth(v) for v in value), default=0)
    return 0


def test_generator_json_diversity():
    texts = generated("json", 400, 11)
    assert len(set(texts)) > 150
    types = set()
    for text in texts:
        types.update(lark_token_types("json", text))
    assert types == {t.name for t in lark_parser("json").terminals} - {"WS"}
    values = [json.loads(t) for t in texts]
    assert max(json_depth(v) for v in values) >= 5
    assert max(len(t) for t in texts) >= 200
    joined = "".join(texts)
    assert re.search(r"\\u[0-9a-fA-F]{4}", joined) and re.search(r'\\[bfnrt"\\/]', joined)
    assert any(ord(c) > 127 for c in joined)  # raw non-ASCII characters
    assert re.search(r"[0-9][eE][+-]?[0-9]", joined) and re.search(r"[0-9]\.[0-9]", joined)
    assert re.search(r"[\t\n\r]", joined)
    assert any(t == t.strip() for t in texts) and any(t != t.strip() for t in texts)


def test_generator_sql_diversity():
    texts = generated("sql", 300, 3)
    assert len(set(texts)) >= 0.95 * len(texts)
    types = set()
    for text in texts:
        types.update(lark_token_types("sql", text))
    all_types = {t.name for t in lark_parser("sql").terminals} - set(lark_parser("sql").ignore_tokens)
    assert len(types) >= 0.9 * len(all_types), sorted(all_types - types)
    joined = "".join(texts)
    assert "--" in joined and "/*" in joined
    assert any(ord(c) > 127 for c in joined)
    assert max(len(t) for t in texts) >= 1000
    assert re.search(r"\bselect\b", joined) and re.search(r"\bSELECT\b", joined)


# --------------------------------------------------------------------------- longest match


class LongestMatchParser:
    """The language definition of docs/grammars.md, run on lark's own LALR(1) table.

    At each lexeme the candidates are the terminals in the parser state's action row plus
    the ignored ones; the lexeme is the longest text a candidate matches (computed on the
    UTF-8 bytes with gramalign's DFAs, so it is the true longest match, not re's leftmost
    one); ties go to the higher priority, then to a string literal over a regex. A tie that
    is still left is an error: the grammar would depend on terminal order.
    """

    def __init__(self, parser: lark.Lark, start: str):
        table = parser.parser.parser.parser.parse_table
        self.states = table.states
        self.start_state = table.start_states[start]
        self.end_state = table.end_states[start]
        self.terminals = {t.name: t for t in parser.terminals}
        self.ignore = sorted(parser.ignore_tokens)
        self.tables = {}
        self.regexes = {}
        for name, term in self.terminals.items():
            dfa = regex_to_dfa(term.pattern.to_regexp())
            self.tables[name] = (dfa.transitions.tolist(), dfa.accepting.tolist(), dfa.initial)
            self.regexes[name] = re.compile(term.pattern.to_regexp())
        self._candidates: dict[int, list[str]] = {}
        self.regex_checks = 0

    def candidates(self, state: int) -> list[str]:
        found = self._candidates.get(state)
        if found is None:
            found = sorted({n for n in self.states[state] if n in self.terminals} | set(self.ignore))
            self._candidates[state] = found
        return found

    def longest(self, name: str, data: bytes, pos: int) -> int:
        transitions, accepting, state = self.tables[name]
        best = -1
        i = pos
        while True:
            if accepting[state]:
                best = i - pos
            if i == len(data):
                return best
            state = transitions[state][data[i]]
            if state < 0:
                return best
            i += 1

    def feed(self, stack: list[int], terminal: str) -> None:
        while True:
            action, arg = self.states[stack[-1]].get(terminal, (None, None))
            if action is None:
                raise SyntaxError(f"parser cannot take {terminal}")
            if action is Shift:
                stack.append(arg)
                return
            size = len(arg.expansion)
            if size:
                del stack[-size:]
            goto_action, goto_state = self.states[stack[-1]][arg.origin.name]
            assert goto_action is Shift
            stack.append(goto_state)
            if terminal == "$END" and stack[-1] == self.end_state:
                return

    def parse(self, text: str) -> list[tuple[str, int, str]]:
        """The non-ignored lexemes as (terminal, char offset, text); SyntaxError if rejected."""
        data = text.encode("utf-8")
        stack = [self.start_state]
        tokens = []
        pos = cpos = 0
        while pos < len(data):
            matches = []
            for name in self.candidates(stack[-1]):
                length = self.longest(name, data, pos)
                # every regex's leftmost (re) match is its longest match, as lark assumes
                m = self.regexes[name].match(text, cpos)
                self.regex_checks += 1
                re_length = len(m.group().encode("utf-8")) if m else -1
                re_length = -1 if re_length == 0 else re_length
                assert re_length == length, (name, text[cpos:cpos + 40], re_length, length)
                if length > 0:
                    matches.append((length, self.terminals[name].priority,
                                    isinstance(self.terminals[name].pattern, PatternStr), name))
            if not matches:
                raise SyntaxError(f"no lexeme at byte {pos}")
            best = max(m[:3] for m in matches)
            winners = [m[3] for m in matches if m[:3] == best]
            assert len(winners) == 1, f"tie between {winners} at {text[cpos:cpos + 40]!r}"
            name = winners[0]
            lexeme = data[pos:pos + best[0]].decode("utf-8")
            if name not in self.ignore:
                self.feed(stack, name)
                tokens.append((name, cpos, lexeme))
            pos += best[0]
            cpos += len(lexeme)
        self.feed(stack, "$END")
        return tokens


@lru_cache(maxsize=None)
def longest_match_parser(name: str) -> LongestMatchParser:
    return LongestMatchParser(lark_parser(name), BUILTIN_GRAMMARS[name])


def lark_tokens(name: str, text: str) -> list[tuple[str, int, str]]:
    interactive = lark_parser(name).parse_interactive(text)
    tokens = [(token.type, token.start_pos, str(token)) for token in interactive.iter_parse()]
    interactive.feed_eof()
    return tokens


def longest_match_verdict(name: str, text: str) -> bool:
    try:
        longest_match_parser(name).parse(text)
    except SyntaxError:
        return False
    return True


LEXING_EDGE_CASES = {
    "json": ["-0", "0e0", "1E-0", '"\\u00e9\\\\"', "[0,-0.0,1e5]", 'true', '{"true":false}',
             " [ ] ", "1.5e+10", '"\U0001f600\x7f"', "[\n\"a\"\r,\t\"b\"]"],
    "sql": [
        "select a--b\nfrom t", "select a/*b*/from t", "select a-b, a - -b, a/ b from t",
        "select 1.e5, .5e-3, 0x1F, 0x, 1e, 1.x from t", "select selected, fromage, order_id from t",
        "SELECT\"select\"FROM\"from\"", "select 'it''s', 'a''''b' from t", "select a<>b, a<=b, a<b, a>=b, a==b, a=b",
        "select ?, ?12, :x, @y, $z", "select current_time, current_timestamp, current_date",
        "select a from t where a in(1)and b not like'x'escape'y'", "select 1;select 2;",
        "select key, no, action, temp from key", "create temp table temp (temp temp, key key)",
        "select a||b||c", "select * from t intersect select * from u", "select x from t left join u using(a)",
        "select a/**/from/**//**/t--\n", "select t.a, t.*, \"t\".\"a\" from t", "SELECT COUNT(*) FROM t",
    ],
}


@pytest.mark.parametrize("name", WITHOUT_LAYOUT)
def test_longest_match_lexing_agrees_with_lark(name):
    """On every generated string (and edge cases, and the SQL corpus) lark's contextual
    lexer splits the text into exactly the lexemes that longest-match lexing gives."""
    texts = list(generated(name, 400 if name == "json" else 300, 11 if name == "json" else 3))
    texts += LEXING_EDGE_CASES[name]
    if name == "sql":
        texts += real_sql_queries()
        texts.append(SQL_QUERIES_PATH.read_text("utf-8"))
    checker = longest_match_parser(name)
    for text in texts:
        assert checker.parse(text) == lark_tokens(name, text), text
    assert checker.regex_checks > 10_000


@pytest.mark.parametrize("name", WITHOUT_LAYOUT)
def test_longest_match_verdicts_agree_with_lark_on_mutants(name):
    """Both directions: on random one-character edits of generated strings, longest-match
    lexing + lark's table accepts exactly when lark accepts, with the same lexemes."""
    rng = random.Random(f"mutants-{name}")
    texts = list(generated(name, 400 if name == "json" else 300, 11 if name == "json" else 3))[:150]
    checker = longest_match_parser(name)
    chars = MUTATION_CHARS if name == "json" else SQL_MUTATION_CHARS
    accepted = rejected = 0
    for text in texts:
        for mutant in mutants(text, rng, 3, chars):
            verdict = lark_accepts(name, mutant)
            assert longest_match_verdict(name, mutant) == verdict, mutant
            if verdict:
                assert checker.parse(mutant) == lark_tokens(name, mutant), mutant
                accepted += 1
            else:
                rejected += 1
    assert accepted > 50 and rejected > 100


def test_longest_match_checker_detects_disagreement():
    """The checker is not vacuous: grammars written against longest match are caught."""
    # A priority makes lark's lexer take the shorter "a" where /a+/ matches more.
    parser = lark.Lark('start: (A | B)+\nA.2: "a"\nB: /a+/', parser="lalr")
    checker = LongestMatchParser(parser, "start")
    interactive = parser.parse_interactive("aa")
    lark_types = [token.type for token in interactive.iter_parse()]
    assert lark_types == ["A", "A"]
    assert [t[0] for t in checker.parse("aa")] == ["B"]
    # A regex whose leftmost match is not its longest one.
    checker = LongestMatchParser(lark.Lark('start: X+\nX: /a|ab/', parser="lalr"), "start")
    with pytest.raises(AssertionError, match="X"):
        checker.parse("ab")


def test_longest_match_agrees_on_json_files():
    checked = 0
    for path in json_files_on_this_machine():
        try:
            text = path.read_text("utf-8")
        except UnicodeDecodeError:
            continue
        if len(text) > 30_000:
            continue
        assert longest_match_verdict("json", text) == lark_accepts("json", text), path
        if lark_accepts("json", text):
            assert longest_match_parser("json").parse(text) == lark_tokens("json", text), path
        checked += 1
    assert checked >= 5


SQL_TEXTS = ["SELECT a FROM t", "SELECT a FROM t -- note", "SELECT a /* why */ FROM t", "SELECT a FROM t;",
             "INSERT INTO t VALUES (1)", "SELECT a FROM t; SELECT b FROM u", "WITH x AS (SELECT 1) SELECT * FROM x"]


@pytest.mark.parametrize("comments", [True, False])
@pytest.mark.parametrize("start", [None, "select_stmt"])
def test_builtin_sql_with_another_start_and_without_comments_means_what_lark_says(start, comments):
    """The options mean what lark gives for the same grammar text: another start rule, and
    the comment %ignore lines dropped."""
    from gramalign.grammar.parser_tables import build_parser_tables
    from gramalign.parsing import IncrementalParser

    grammar = load_builtin("sql", start=start, comments=comments)
    text = builtin_grammar_text("sql")
    if not comments:
        text = "\n".join(line for line in text.splitlines() if not re.fullmatch(r"%ignore \w*COMMENT\w*", line.strip()))
    oracle = lark.Lark(text, start=start or BUILTIN_GRAMMARS["sql"], parser="lalr")
    parser = IncrementalParser(build_parser_tables(grammar))
    for sample in SQL_TEXTS:
        assert parser.accepts(sample.encode()) == lark_parser_accepts(oracle, sample), (start, comments, sample)
    assert parser.accepts(b"SELECT a /* why */ FROM t") == comments


def test_builtin_options_are_checked():
    with pytest.raises(GrammarError):
        load_builtin("sql", start="no_such_rule")
    with pytest.raises(GrammarError, match="python"):
        load_builtin("python", comments=False)
