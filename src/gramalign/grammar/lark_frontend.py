"""Lark EBNF to the grammar IR, through lark's own grammar loader.

lark expands the EBNF (``?rule`` inlining, ``!rule``, ``[]``, ``*``, ``+``, ranges, templates,
``%import``, ``%ignore``, priorities) into BNF rules and named terminals; this module turns
them into :class:`Grammar` and checks what gramalign needs beyond lark: every terminal is a
regex our engine supports (one with lazy quantifiers means its first matches, see
:mod:`.first_match`) and matches no empty string, no ``%declare`` (except the indent
and dedent terminals of an :class:`Indentation` layout), and the start symbol derives at
least one string.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import sys

import lark
from lark.exceptions import GrammarError as _LarkError
from lark.exceptions import UnexpectedInput, VisitError
from lark.lexer import PatternStr

from ..errors import GrammarError, LarkGrammarError, RegexError
from .automata.algebra import concatenate, intersect, union
from .automata.dfa import DEAD, literal_dfa
from .automata.first_match import LazyQuantifierError, first_match_dfa, first_matches_among, greedy_first_matches, has_lazy
from .automata.lookaround import BoundaryBeforeError, LookaroundError
from .automata.regex import regex_dfa_after, regex_lookahead_classes, regex_to_dfa
from .grammar import Grammar, Indentation, Rule, Terminal
from .lexer import AFTER_OTHER, AFTER_WORD
from .limits import CompileLimits, applied, check_size, check_time

try:  # Python >= 3.11
    from re import _parser as _sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as _sre_parse  # type: ignore[no-redef]

try:  # lark measures patterns with the regex module where it is installed
    import regex as _regex_module

    _REGEX_ERRORS: tuple = (re.error, _regex_module.error)
except ImportError:  # pragma: no cover - regex is optional for lark
    _REGEX_ERRORS = (re.error,)

_DECLARE = re.compile(r"^[ \t]*%declare\b(.*)$", re.MULTILINE)


_LEXERS = {"lalr": ("contextual",), "earley": ("dynamic", "dynamic_complete")}


def grammar_from_lark(text: str, *, start: str = "start", indentation: Indentation | None = None,
                      always_lexed: tuple[str, ...] = (), import_paths=(), source_path: str | None = None,
                      parser: str = "lalr", lexer: "str | None" = None,
                      limits: "CompileLimits | None" = None) -> Grammar:
    """The :class:`Grammar` of Lark grammar ``text`` with start rule ``start``.

    ``%import`` looks in ``import_paths`` first (directories, as lark's option of that name),
    then, for a relative import (``%import .x``), in the directory of ``source_path`` (the
    file ``text`` was read from) or else the working directory, then in lark's grammars.
    ``always_lexed`` is a tuple (or list) of terminal names; a str is refused with a
    TypeError rather than read as one name per letter. ``parser``/``lexer``: lark's options
    of those names whose language the grammar is (see :meth:`.Grammar.from_lark`)."""
    if parser not in _LEXERS:
        raise LarkGrammarError(f"parser={parser!r}: gramalign reads lark's 'lalr' and 'earley' parsers")
    lexer = _LEXERS[parser][0] if lexer is None else lexer
    if lexer not in _LEXERS[parser]:
        raise LarkGrammarError(f"lexer={lexer!r} with parser={parser!r}: gramalign reads "
                               + " or ".join(repr(name) for name in _LEXERS[parser]) + " there")
    if parser == "earley" and (indentation is not None or always_lexed):
        raise LarkGrammarError("an indentation layout or always_lexed terminals need parser='lalr' (they are "
                               "post-lexer options; lark's Earley parser lexes as it parses)")
    if isinstance(always_lexed, (str, bytes)):
        raise TypeError(f"always_lexed must be a tuple of terminal names, not a {type(always_lexed).__name__} "
                        f"(write ({always_lexed!r},) for one name)")
    always_lexed = tuple(always_lexed)
    try:
        with applied(limits):
            if isinstance(text, str):
                check_size("max_grammar_chars", len(text), "the grammar text")
            return _grammar_from_lark(text, start, indentation, always_lexed, import_paths, source_path, lexer)
    except RecursionError:  # lark's loader and transformers recurse once per nesting level
        raise LarkGrammarError(f"the grammar nests too deeply (Python's recursion limit is "
                               f"{sys.getrecursionlimit()}); flatten the deepest rule into several rules") from None


def _grammar_from_lark(text: str, start: str, indentation: Indentation | None, always_lexed: tuple[str, ...],
                       import_paths, source_path: str | None, lexer: str = "contextual") -> Grammar:
    if not isinstance(text, str):
        raise TypeError(f"a Lark grammar is a str, not {type(text).__name__}")
    layout_names = {indentation.indent, indentation.dedent} if indentation is not None else set()
    for declared in _DECLARE.finditer(text):
        names = set(declared.group(1).split("//")[0].split())
        if names - layout_names:
            line = text.count("\n", 0, declared.start()) + 1
            raise LarkGrammarError(f"%declare{declared.group(1)} is not supported: declared terminals need "
                                   "an external lexer, and gramalign lexes by itself (only the indent and "
                                   "dedent terminals of an Indentation layout may be declared)", line, 1)
    loaded = None
    try:
        from lark.load_grammar import load_grammar

        loaded, _ = load_grammar(text, source_path or "<grammar>", [str(p) for p in import_paths], False)
        lark_terminals, lark_rules, ignore = loaded.compile([start], set())
    except UnexpectedInput as exc:
        raise LarkGrammarError(f"syntax error in the grammar: {_first_line(exc)}", exc.line, exc.column) from None
    except VisitError as exc:  # lark's transformers wrap what they hit (an AssertionError for "a".."bc")
        if isinstance(exc.orig_exc, _REGEX_ERRORS) and loaded is not None:
            # lark compiled a terminal's alternatives joined ("a".."c" | "z".."a"); the error names none
            for name, _ in getattr(loaded, "term_defs", ()):
                found = _definition(name, text)
                place = None if found is None else _faulty_piece(found, text)
                if place is not None:
                    why = getattr(exc.orig_exc, "msg", exc.orig_exc)  # its position is in lark's joined pattern
                    raise LarkGrammarError(f"terminal {name}: lark cannot compile its pattern: {why}",
                                           *_line_and_column(text, place)) from None
        cause = str(exc.orig_exc).strip() or _VISIT_HINTS.get(exc.rule, type(exc.orig_exc).__name__)
        token = _first_token(exc.obj)
        shown = f" {_tree_text(exc.obj)}" if token is not None else ""
        raise LarkGrammarError(f"lark cannot read this {exc.rule}{shown}: {cause}",
                               getattr(token, "line", None), getattr(token, "column", None)) from None
    except OSError as exc:  # %import of a grammar file that cannot be read
        name = exc.filename or ""
        stem = name.rsplit("/", 1)[-1].removesuffix(".lark")
        line = next((number for number, row in enumerate(text.splitlines(), 1)
                     if row.lstrip().startswith("%import") and stem and stem in row), None)
        raise LarkGrammarError(f"%import: cannot read the grammar file {name!r} ({exc.strerror or exc})",
                               line) from None
    except (_LarkError, KeyError, ValueError, AssertionError) as exc:
        message = str(exc).strip() or type(exc).__name__
        located = re.search(r"at line (\d+) column (\d+)", message)
        if located:
            raise LarkGrammarError(message.splitlines()[0], int(located.group(1)), int(located.group(2))) from None
        raise LarkGrammarError(message, _line_of(message, text)) from None

    used = {symbol.name for rule in lark_rules for symbol in rule.expansion if symbol.is_term}
    used |= set(ignore)
    terminals = []
    split: dict[str, list[str]] = {}  # terminal -> the terminals of its lookahead classes, when several
    reads_before = False  # a terminal starts with a word boundary
    for terminal in sorted(lark_terminals, key=_lark_lexer_order):
        if terminal.name not in used:
            continue
        check_time(f"terminal {terminal.name}")
        converted = Terminal(str(terminal.name), terminal.pattern.to_regexp(), 0, int(terminal.priority),
                             isinstance(terminal.pattern, PatternStr))
        equivalent = _FIRST_MATCH_EQUIVALENTS.get(converted.pattern)
        if equivalent is not None:
            converted = Terminal(converted.name, equivalent, 0, converted.priority)
        try:
            try:
                classes = _lookahead_classes(converted)
            except BoundaryBeforeError:  # a word boundary at the start of the pattern
                classes = _after_each_kind_of_character(converted)
                reads_before = True
            if classes is not None:
                if len(classes) > 1:
                    split[converted.name] = [c.name for c in classes]
                for part in classes:
                    _check_lexemes(part.name, part.dfa, text, terminal.name)
                terminals.extend(classes)
                continue
            first_match = first_match_dfa(converted.pattern)
            if first_match is None:  # greedy: re.match's first route may still not be the longest
                first_match = greedy_first_matches(converted.pattern, converted.dfa)
            if first_match is not None:  # the lexemes lark's re.match returns
                converted = Terminal.from_dfa(converted.name, first_match, priority=converted.priority)
            dfa = converted.dfa
        except LazyQuantifierError as exc:
            raise LarkGrammarError(
                f"terminal {terminal.name}{_imported(terminal.name, text)}: lark takes the first match of "
                f"/{terminal.pattern.value}/ (a lazy quantifier), which gramalign reproduces only where it is the "
                f"shortest match, and this pattern has {exc}; write it greedily, saying where the lexeme stops "
                f"(e.g. /\"[^\"]*\"/ rather than /\".*?\"/; see docs/grammars.md)",
                _terminal_line(terminal.name, text)) from None
        except LookaroundError as exc:
            raise LarkGrammarError(
                f"terminal {terminal.name}{_imported(terminal.name, text)}: {exc}\nlark reads that text with "
                "re.match, so the lexeme depends on what surrounds it; gramalign reads one lookahead past the "
                "lexeme per alternative (negative, or positive of one character), and lookarounds inside it; "
                "define the terminal (in this grammar, overriding any import) with such a pattern, e.g. /(?<=a)b/ "
                "-> /b/ with the context moved into a rule (see docs/grammars.md)",
                _terminal_line(terminal.name, text)) from None
        except RegexError as exc:
            raise LarkGrammarError(f"terminal {terminal.name}{_imported(terminal.name, text)}: {exc}",
                                   *_pattern_place(terminal.name, text)) from None
        _check_lexemes(terminal.name, dfa, text, terminal.name)
        terminals.append(converted)
    if reads_before:  # the next lexeme's start depends on the class of each lexeme's last character
        terminals = _by_last_character(terminals, split)
    if split:
        layout_terminals = set() if indentation is None else {indentation.newline, *indentation.open_brackets,
                                                              *indentation.close_brackets}
        for name in split:
            if name in layout_terminals:
                why = ("has a lookahead past its lexeme" if not reads_before else "would be split in two (by a "
                       "lookahead past its lexeme, or by lexemes that end with a word character and lexemes that do "
                       "not, where a terminal starts with a word boundary)")
                raise LarkGrammarError(f"terminal {name} of the indentation layout {why}; write it without one",
                                       _terminal_line(name, text))
        ignore = [part for name in ignore for part in split.get(name, [name])]
        always_lexed = tuple(part for name in always_lexed for part in split.get(name, [name]))
    known_terminals = {t.name for t in terminals}
    missing = used - known_terminals - {t.name for t in lark_terminals} - layout_names
    if missing:
        raise LarkGrammarError(f"undefined terminal(s): {', '.join(sorted(missing))}")

    alternatives: dict[str, list[tuple[str, ...]]] = {}
    priorities: dict[str, int] = {}
    for rule in lark_rules:
        name = str(rule.origin.name)
        alternatives.setdefault(name, []).append(tuple(str(s.name) for s in rule.expansion))
        # lark gives every alternative of ``name.p`` the priority p (None when unset, read as 0)
        priorities.setdefault(name, rule.options.priority or 0)
    for name, parts in split.items():  # a terminal whose lexemes differ in what may follow them
        alternatives[name] = [(part,) for part in parts]
        priorities[name] = 0
    if start not in alternatives:
        raise LarkGrammarError(f"the start rule {start!r} is not defined")
    rules = tuple(Rule(name, tuple(alts), priorities[name]) for name, alts in alternatives.items())
    _check_productive(rules, known_terminals | layout_names, start, text)  # INDENT/DEDENT come from the layout
    if indentation is not None:
        _check_layout(indentation, known_terminals, used, set(ignore))
    unknown = [name for name in always_lexed if name not in known_terminals]
    if unknown:
        raise LarkGrammarError(f"always_lexed names terminal(s) the grammar does not use: {', '.join(unknown)}")
    if lexer == "contextual":
        grammar = Grammar(tuple(terminals), rules, start, tuple(str(name) for name in ignore), source=text,
                          indentation=indentation, always_lexed=tuple(always_lexed))
    else:
        grammar = _earley_grammar(tuple(terminals), rules, start, tuple(str(name) for name in ignore), text, lexer,
                                  split, reads_before)
    from .parser_tables import build_parser_tables

    try:
        build_parser_tables(grammar)  # LALR conflicts and lexer limits surface here, not at compile()
    except LarkGrammarError:
        raise
    except GrammarError as exc:
        if lexer != "contextual" or "LALR(1)" not in str(exc):
            raise
        raise LarkGrammarError(f"{exc}\nlark's Earley parser reads any context-free grammar, ambiguous or not, "
                               "and so does gramalign: Grammar.from_lark(text, parser=\"earley\") (the language "
                               "of lark.Lark(text, parser=\"earley\"); or write the grammar in GBNF)") from None
    return grammar


def _earley_grammar(terminals: tuple[Terminal, ...], rules: tuple[Rule, ...], start: str, ignore: tuple[str, ...],
                    text: str, lexer: str, split: dict, reads_before: bool) -> Grammar:
    """The grammar as lark's Earley parser reads it with ``lexer``: generalized, lexed every
    way, each terminal (``"dynamic"``) or each ignored one (``"dynamic_complete"``: lark
    matches those once, greedily) by its own longest match."""
    looking = [t.name for t in terminals if t.lookahead is not None or t.needs_text_after]
    if reads_before or looking or split:
        name = (looking or list(split) or [t.name for t in terminals if t.ends_in_word is not None])[0]
        raise LarkGrammarError(f"terminal {name} looks at the text around its lexeme (a lookahead or a word "
                               "boundary), which gramalign reads only with parser='lalr'; write it without one",
                               _terminal_line(name, text))
    own = tuple(t.name for t in terminals) if lexer == "dynamic" else ignore
    return Grammar(terminals, rules, start, ignore, source=text, strict=False, generalized=True, every_split=True,
                   own_longest=own)


_FIRST_MATCH_EQUIVALENTS = {
    # lark.lark's REGEXP. Its lazy repeat of a 1-or-2-character body is no shape of
    # first_match, but re.match's first match is known: re tries to close at each unit
    # boundary first, then an escape (\/ or \\), then a lone character. So it reads the
    # body escape-aware up to the first unescaped slash; at an escaped slash \/ it falls back
    # to reading the backslash alone and closing there only when no route from after the
    # pair finds a match, i.e. when no "/" at all follows (any later slash is reachable by
    # reading characters one at a time). The second alternative is that fallback.
    r"\/(?!\/)(\\\/|\\\\|[^\/])*?\/[imslux]*":
        r"\/(?!\/)(?:\\[\s\S]|[^\/\\])*\/[imslux]*|\/(?!\/)(?:\\[\s\S]|[^\/\\])*\\\/[imslux]*(?![\s\S]*\/)",
}
"""Terminals of lark's shipped grammars (as lark composes them) with an exact regular
equivalent, where no general rule of first_match covers their lazy repeats (tested against
re.match on random texts)."""


def _lookahead_classes(terminal: Terminal) -> "list[Terminal] | None":
    """The terminal as one terminal per class of its lexemes by what must (not) follow them
    (named ``T#k`` when there are several), where a lookahead reads past the lexeme; None
    where none does. Lazy quantifiers keep the first matches, as in
    :func:`.first_match.first_match_dfa`."""
    found = regex_lookahead_classes(terminal.pattern)
    if found is None:
        return None
    everything, classes = found
    first = first_matches_among(terminal.pattern, everything)
    if first is not None:
        classes = [(intersect(lexemes, first), rest, needs) for lexemes, rest, needs in classes]
        classes = [(lexemes, rest, needs) for lexemes, rest, needs in classes if lexemes.num_states]
    names = [terminal.name] if len(classes) == 1 else [f"{terminal.name}#{k}" for k in range(len(classes))]
    return [Terminal.from_dfa(name, lexemes, priority=terminal.priority, lookahead=rest, needs_text_after=needs)
            for name, (lexemes, rest, needs) in zip(names, classes)]


def _after_each_kind_of_character(terminal: Terminal) -> list[Terminal]:
    """A terminal with a word boundary at its start, as one terminal per class of its lexemes
    by what must (not) follow them, each read after a word character (its automaton's words
    start with ``AFTER_WORD``) or after another character or at the start of the text
    (``AFTER_OTHER``); see :mod:`.lexer`."""
    if has_lazy(_sre_parse.parse(terminal.pattern)):
        raise LookaroundError("a word boundary at the start of a pattern with a lazy quantifier is not supported",
                              terminal.pattern, 0)
    if re.search(r"\(\?[aiLmsux]*a", terminal.pattern):  # the lexemes before are classed by Unicode \w
        raise LookaroundError("a word boundary at the start of a pattern with the ASCII flag is not supported",
                              terminal.pattern, 0)
    groups: dict[tuple, list] = {}
    for marker, character in ((AFTER_WORD, "a"), (AFTER_OTHER, " ")):
        found = regex_lookahead_classes(terminal.pattern, before=character)
        classes = [(regex_dfa_after(terminal.pattern, character), None, False)] if found is None else found[1]
        for lexemes, rest, needs in classes:
            if lexemes.initial != DEAD:
                entry = groups.setdefault((b"" if rest is None else rest.digest, needs), [rest, needs, []])
                entry[2].append(concatenate([literal_dfa([bytes([marker])]), lexemes]))
    names = [terminal.name] if len(groups) == 1 else [f"{terminal.name}#{k}" for k in range(len(groups))]
    parts = []
    for name, (rest, needs, words) in zip(names, groups.values()):
        dfa = words[0] if len(words) == 1 else union(*words)
        parts.append(Terminal.from_dfa(name, dfa, priority=terminal.priority, lookahead=rest, needs_text_after=needs))
    return parts


def _by_last_character(terminals: list[Terminal], split: dict[str, list[str]]) -> list[Terminal]:
    """Each terminal of a grammar where some terminal starts with a word boundary, told
    whether its lexemes end with a word character (``Terminal.ends_in_word``: where the next
    lexeme starts), split in two (``T~w``, ``T~o``, recorded in ``split``) where both occur."""
    ends_word, ends_other = (concatenate([_optional_marker(), regex_to_dfa(pattern)])
                             for pattern in (r"(?s:.*\w)", r"(?s:.*\W)"))
    result = []
    for terminal in terminals:
        parts = []
        for suffix, ending, in_word in (("~w", ends_word, True), ("~o", ends_other, False)):
            words = intersect(terminal.dfa, ending)
            if words.initial != DEAD:
                parts.append((suffix, words, in_word))
        if len(parts) == 1:
            result.append(dataclasses.replace(terminal, ends_in_word=parts[0][2]))
            continue
        for suffix, words, in_word in parts:
            result.append(Terminal.from_dfa(terminal.name + suffix, words, priority=terminal.priority,
                                            lookahead=terminal.lookahead, needs_text_after=terminal.needs_text_after,
                                            ends_in_word=in_word))
        names = [terminal.name + suffix for suffix, _, _ in parts]
        owner = next((name for name, members in split.items() if terminal.name in members), terminal.name)
        members = split.get(owner, [owner])
        split[owner] = [part for member in members for part in (names if member == terminal.name else [member])]
    return result


def _optional_marker():
    """The empty word or one of the bytes that say what came before a lexeme."""
    return literal_dfa([b"", bytes([AFTER_WORD]), bytes([AFTER_OTHER])])


def _check_lexemes(name: str, dfa, text: str, defined: str) -> None:
    """A terminal (``defined`` in the grammar text) must match some non-empty string only."""
    if dfa.num_states == 0:
        raise LarkGrammarError(f"terminal {name} matches no string at all", _definition_line(defined, text))
    if dfa.accepting[dfa.initial]:
        raise LarkGrammarError(f"terminal {name} matches the empty string; a lexer cannot make progress on it "
                               "(use ? or * in the rule instead)", _definition_line(defined, text))


def _lark_lexer_order(terminal) -> tuple:
    """lark's ``BasicLexer`` sort key: its lexer tries terminals in this order and takes the
    first that matches. Listing the IR's terminals in it makes gramalign's tie-break (priority,
    then literals first, then grammar order; see ``docs/grammars.md``) pick lark's terminal
    wherever lark's first match is the longest one."""
    try:
        width = terminal.pattern.max_width
    except (ValueError, ImportError, *_REGEX_ERRORS):  # a regex lark cannot measure; ours refuses it later
        width = 0
    return -terminal.priority, -width, -len(terminal.pattern.value), terminal.name


def _check_layout(indentation: Indentation, terminals: set[str], used: set[str], ignore: set[str]) -> None:
    if indentation.newline not in terminals:
        raise LarkGrammarError(f"the indentation layout needs the newline terminal {indentation.newline!r}, "
                               "which the grammar does not define or use")
    if indentation.newline in ignore:
        raise LarkGrammarError(f"the newline terminal {indentation.newline!r} of an indentation layout "
                               "cannot be %ignore'd")
    for name in (indentation.indent, indentation.dedent):
        if name not in used:
            raise LarkGrammarError(f"the indentation layout's terminal {name!r} is not used by any rule "
                                   f"(declare it with %declare {name} and use it in the block rule)")
    if indentation.tab_size < 1:
        raise GrammarError(f"Indentation.tab_size must be at least 1, not {indentation.tab_size}")


def _check_productive(rules: tuple[Rule, ...], terminals: set[str], start: str, text: str) -> None:
    """Raise if ``start`` derives no terminal string (the language would be empty)."""
    productive: set[str] = set()
    changed = True
    while changed:
        changed = False
        check_time("checking that the rules terminate")
        for rule in rules:
            if rule.name in productive:
                continue
            if any(all(s in terminals or s in productive for s in alt) for alt in rule.alternatives):
                productive.add(rule.name)
                changed = True
    if start not in productive:
        stuck = sorted(r.name for r in rules if r.name not in productive and not r.name.startswith("__"))
        raise LarkGrammarError(f"the grammar's language is empty: {start!r} derives no finite string "
                               f"(rules that never terminate: {', '.join(stuck)})", _definition_line(start, text))


_VISIT_HINTS = {"range": "both ends of a range must be single characters"}


def _first_token(tree) -> "lark.Token | None":
    if isinstance(tree, lark.Token):
        return tree
    for child in getattr(tree, "children", ()):
        found = _first_token(child)
        if found is not None:
            return found
    return None


def _tree_text(tree) -> str:
    if isinstance(tree, lark.Token):
        return str(tree)
    return " ".join(_tree_text(child) for child in getattr(tree, "children", ()))[:60]


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _line_of(message: str, text: str) -> int | None:
    """lark puts the line in some messages ("... at line 3 ..."); find it, else the line of
    the first symbol the message quotes."""
    found = re.search(r"\bline (\d+)", message)
    if found:
        return int(found.group(1))
    quoted = re.search(r"'([A-Za-z_][A-Za-z0-9_]*)'|\b([A-Z_][A-Z0-9_]{1,})\b", message)
    if quoted:
        name = quoted.group(1) or quoted.group(2)
        for number, line in enumerate(text.splitlines(), 1):
            if re.search(rf"\b{re.escape(name)}\b", line):
                return number
    return None


def _import_line(name: str, text: str) -> int | None:
    """The line of the ``%import`` that brought terminal ``name`` in (lark names what an
    import pulls along ``module__NAME``), or None."""
    bare = name.rsplit("__", 1)[-1].lstrip("_")
    module = name.split("__", 1)[0] if "__" in name else None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.split("//", 1)[0]
        if not stripped.lstrip().startswith("%import"):
            continue
        words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", stripped))
        if name in words or bare in {w.lstrip("_") for w in words} or (module is not None and module in words):
            return number
    return None


def _imported(name: str, text: str) -> str:
    """" (imported at line n)" for a terminal not defined in ``text`` but imported by it."""
    if _definition_line(name, text) is not None:
        return ""
    line = _import_line(name, text)
    return f" (from the %import at line {line})" if line is not None else ""


def _terminal_line(name: str, text: str) -> int | None:
    """Where terminal ``name`` is defined in ``text``, else the ``%import`` line it came from."""
    line = _definition_line(name, text)
    return line if line is not None else _import_line(name, text)


def _definition(name: str, text: str) -> "re.Match | None":
    # [ \t]* rather than \s*: a match must not start on a blank line above the definition
    return re.compile(rf"^[ \t]*[?!]?{re.escape(name)}(\.-?\d+)?[ \t]*:", re.MULTILINE).search(text)


def _definition_line(name: str, text: str) -> int | None:
    found = _definition(name, text)
    return text.count("\n", 0, found.start()) + 1 if found else None


# The pieces of a terminal's definition, as lark's grammar reads them: a comment (to the end
# of the line), a string with an optional ``.."c"`` that makes it a range, a /regex/ and flags.
_PIECE = re.compile(r'(?P<comment>//[^\n]*|#[^\n]*)'
                    r'|(?P<string>"(?:\\.|[^"\\\n])*"i?)(?:[ \t]*\.\.[ \t]*(?P<end>"(?:\\.|[^"\\\n])*"))?'
                    r'|/(?!/)(?P<regex>(?:\\.|[^/\\\n])+)/(?P<flags>[imslux]*)')


def _pattern_place(name: str, text: str) -> tuple[int | None, int | None]:
    """(line, column) of the pattern at fault in terminal ``name``'s definition (see
    :func:`_faulty_piece`), else of the start of its body; (the ``%import`` line, None) for
    an imported terminal."""
    found = _definition(name, text)
    if found is None:
        return _import_line(name, text), None
    body = text[found.end():_definition_end(found, text)]
    place = _faulty_piece(found, text)
    return _line_and_column(text, found.end() + len(body) - len(body.lstrip()) if place is None else place)


def _definition_end(found: "re.Match", text: str) -> int:
    end = text.find("\n", found.end())
    while end >= 0 and text[end + 1:].lstrip(" \t").startswith("|"):  # alternatives on the lines below
        end = text.find("\n", end + 1)
    return len(text) if end < 0 else end


def _faulty_piece(found: "re.Match", text: str) -> int | None:
    """Where in ``text`` the definition ``found`` has its first /regex/ that our regex engine
    refuses on its own, or its first range with the ends out of order; None if it has none."""
    for piece in _PIECE.finditer(text, found.end(), _definition_end(found, text)):
        if piece["regex"] is not None:
            try:
                regex_to_dfa(f"(?{piece['flags']}:{piece['regex']})" if piece["flags"] else piece["regex"])
            except LookaroundError:  # read with what surrounds it: not at fault alone
                continue
            except GrammarError:
                return piece.start()
        elif piece["end"] is not None:
            try:
                low, high = ast.literal_eval(piece["string"].rstrip("i")), ast.literal_eval(piece["end"])
            except (ValueError, SyntaxError):
                continue
            if len(low) == len(high) == 1 and low > high:
                return piece.start()
    return None


def _line_and_column(text: str, offset: int) -> tuple[int, int]:
    return text.count("\n", 0, offset) + 1, offset - text.rfind("\n", 0, offset)


def grammar_from_lark_file(path, **options) -> Grammar:
    """:func:`grammar_from_lark` of the file at ``path``, its relative imports resolved
    against the file's directory (as ``lark.Lark.open`` does)."""
    import os

    path = os.path.abspath(os.fspath(path))
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except OSError as exc:
        raise LarkGrammarError(f"cannot read the grammar file {path}: {exc.strerror or exc}") from None
    return grammar_from_lark(text, source_path=path, **options)


__all__ = ["LarkGrammarError", "grammar_from_lark", "grammar_from_lark_file"]
_ = lark  # lark is the loader; imported here so a missing install fails at import time
