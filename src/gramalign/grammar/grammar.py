"""The grammar IR: what a language is, independent of any tokenizer.

A grammar is a context-free grammar in plain BNF over *terminals*, each a byte-level
regular language. Text is split into terminals by longest match (see ``docs/grammars.md``),
terminals named in ``ignore`` may appear between any two terminals and are dropped, and
the rest must derive from ``start``. Front ends (regex, Lark EBNF, JSON Schema) all produce
this one structure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property

from ..errors import GrammarError, RegexError
from .automata.dfa import ByteDFA, literal_dfa
from .automata.regex import SUPPORTED_FLAGS, regex_to_dfa
from .limits import CompileLimits, applied, check_size


@dataclass(frozen=True)
class Terminal:
    """A named token class of the language, given as a Python regular expression.

    ``priority`` and ``literal`` break ties between terminals that match the same longest
    text: the higher priority wins, then a literal (a quoted string in Lark) beats a pattern.

    ``lookahead`` is a negative lookahead past the lexeme: a lexeme of this terminal that the
    lexer takes is refused when the text right after it starts with a word of this automaton
    (lark's ``0(?![1-9])``; see ``docs/grammars.md``). With ``needs_text_after``, the text
    may not end right after a lexeme either: that is how a positive lookahead of one
    character, ``(?=\\w)``, is read (``lookahead`` then holds the other characters).
    """

    name: str
    pattern: str
    flags: int = 0
    priority: int = 0
    literal: bool = False
    automaton: ByteDFA | None = field(default=None, compare=False, repr=False)
    """The terminal's DFA when it was built directly rather than from ``pattern``."""
    lookahead: ByteDFA | None = field(default=None, compare=False, repr=False)
    needs_text_after: bool = False
    ends_in_word: "bool | None" = None
    """In a grammar where some terminal starts with a word boundary: whether this terminal's
    lexemes end with a word character (then the next lexeme starts "after a word character",
    see ``lexer.AFTER_WORD``); None elsewhere."""
    length: "tuple[int, int] | None" = None
    """For a JSON string whose automaton spells every string (``"`` then one state that every
    character returns to, then ``"``): the fewest and most code points between the quotes
    (-1: no most), counted by the parser instead of by automaton states (see
    ``json_schema.strings.CountedStrings``)."""
    whole_text: bool = False
    """The pattern is the whole text, not a lexeme among others (``Grammar.from_regex``): a word
    boundary at its start or end reads the start or end of the text (``regex_to_dfa``'s option)."""

    @classmethod
    def from_dfa(cls, name: str, dfa: ByteDFA, *, priority: int = 0, length: "tuple[int, int] | None" = None,
                 lookahead: ByteDFA | None = None, needs_text_after: bool = False,
                 ends_in_word: "bool | None" = None) -> "Terminal":
        """A terminal given by its automaton; ``pattern`` becomes a digest of the automaton
        (and of its ``lookahead``), so equal automata make equal terminals (and share mask caches)."""
        digest = f"(?#dfa:{dfa.num_states}:{dfa.digest.hex()})"
        if lookahead is not None:
            digest += f"(?#not-followed-by:{lookahead.num_states}:{lookahead.digest.hex()})"
        if needs_text_after:
            digest += "(?#followed)"
        return cls(name, digest, priority=priority, automaton=dfa, length=length, lookahead=lookahead,
                   needs_text_after=needs_text_after, ends_in_word=ends_in_word)

    @cached_property
    def dfa(self) -> ByteDFA:
        if self.automaton is not None:
            return self.automaton
        flags = self.flags
        # checked here with plain ints: RegexFlag's ~ keeps only the bits re knows, so an
        # unknown bit such as 1 << 40 would pass a RegexFlag mask unseen
        if isinstance(flags, bool) or not isinstance(flags, int) or flags < 0 or flags & ~int(SUPPORTED_FLAGS):
            raise RegexError(f"unsupported regex flags {flags!r} (supported: re.IGNORECASE, MULTILINE, DOTALL, "
                             "VERBOSE, ASCII, UNICODE)", self.pattern)
        return regex_to_dfa(self.pattern, flags=flags, whole_text=self.whole_text)


@dataclass(frozen=True)
class Rule:
    """``name -> alternatives``; each alternative is a sequence of rule or terminal names.

    ``priority`` (Lark's ``name.2: ...``) settles reduce/reduce conflicts as lark's LALR
    does: where two or more rules could be reduced on the same look-ahead, a rule whose
    priority is higher than every other one's is chosen; equal top priorities stay a conflict.
    """

    name: str
    alternatives: tuple[tuple[str, ...], ...]
    priority: int = 0


@dataclass(frozen=True)
class Indentation:
    """Python-style layout: line breaks and indentation become parser terminals.

    The lexer turns the terminal ``newline`` (a lexeme containing a line break) into the
    parser terminals ``newline``, then ``indent`` when the next line is indented deeper
    than the innermost open block, or one ``dedent`` per block it closes (a column that
    matches no open block is a syntax error). Between an ``open_brackets`` terminal and
    its ``close_brackets`` partner, newline lexemes are ignored. The column of a newline
    lexeme is the width of the spaces and tabs after its last line break (a tab moves to
    the next multiple of ``tab_size``). At the end of the text a missing final newline is
    supplied and every open block is closed. See ``docs/grammars.md``.

    ``indent`` and ``dedent`` have no pattern: in Lark they are ``%declare``-d.
    """

    newline: str = "_NEWLINE"
    indent: str = "_INDENT"
    dedent: str = "_DEDENT"
    open_brackets: tuple[str, ...] = ("LPAR", "LSQB", "LBRACE")
    close_brackets: tuple[str, ...] = ("RPAR", "RSQB", "RBRACE")
    tab_size: int = 8


HANDED_TABLES_ATTRIBUTE = "_handed_parser_tables"
"""Where a grammar holds the parser tables handed to it (``parser_tables.remember_parser_tables``):
on the grammar object, so that they live as long as it does (tables refer to their grammar, so
a weak map from grammars to tables would keep both forever). Not pickled."""


@dataclass(frozen=True)
class Grammar:
    """A formal language, built with ``Grammar.from_regex``, ``Grammar.from_lark`` or
    ``Grammar.builtin``.

    The language is the set of strings derivable from ``start``; terminals are byte-level
    regular languages, rules combine them, ``ignore`` names terminals (typically whitespace)
    allowed anywhere between two terminals.
    """

    terminals: tuple[Terminal, ...]
    rules: tuple[Rule, ...]
    start: str
    ignore: tuple[str, ...] = ()
    source: str = field(default="", compare=False)
    indentation: Indentation | None = None
    always_lexed: tuple[str, ...] = ()
    """Terminals that are lexing candidates in every parser state (lark's post-lexer
    ``always_accept``). With a word terminal here, a keyword must end at a word boundary
    even where no word could follow it (``b orc`` is not ``b or c``)."""
    strict: bool = False
    """Shift/reduce conflicts are errors rather than resolved as shift (grammars generated
    from JSON Schemas are strict: a conflict there would silently change the language)."""
    generalized: bool = False
    """A grammar that is not LALR(1) is still read exactly: the parser follows every action of
    a conflicting table cell (generalized LR, see :mod:`gramalign.parsing.stacks`) instead of
    settling it. GBNF grammars and Lark grammars read with ``parser="earley"`` are generalized;
    an LALR(1) grammar gets the same table either way."""
    every_split: bool = False
    """The text is lexed every way it can be split into terminals, not by longest match: a
    lexeme may end wherever one of its candidates accepts, and where several terminals accept
    the same lexeme each is a reading of its own (lark's ``lexer="dynamic_complete"``). The
    parser tells the readings apart. GBNF grammars are read this way (a rule that refers to
    no recursive rule is one terminal), and Lark grammars read with ``parser="earley"``.
    Such a grammar has no layout, lookaheads, word boundaries or counted strings."""
    lr0: bool = False
    """The grammar is LR(0), as the grammars of JSON Schemas are by construction (their eager
    tables stay LALR(1), whose masks share more, see ``json_schema/__init__.py``): its table
    has no look-aheads, and the parser reduces as soon as the top state can only reduce
    (a *default reduction*), so each stack's lexer candidates are exactly the terminals it
    can shift, found from the states themselves. Where the LR(0) automaton has a conflict,
    the LALR(1) table is built instead (same language; candidates from look-aheads)."""
    own_longest: tuple[str, ...] = ()
    """In an :attr:`every_split` grammar, the terminals whose lexeme is only their own longest
    match where they start (lark's dynamic lexer takes each terminal's ``re.match`` there): a
    reading that ends one early dies if that terminal could have gone on to a longer match."""

    @classmethod
    def from_regex(cls, pattern: str, *, flags: int = 0, limits: "CompileLimits | None" = None) -> "Grammar":
        """The language of strings that ``re.fullmatch(pattern, s, flags)`` accepts.

        Raises :class:`gramalign.RegexError` (with the position in the pattern) for invalid or
        unsupported syntax, before anything else is built, and
        :class:`gramalign.LimitExceeded` past ``limits`` (see :class:`gramalign.CompileLimits`).

        >>> g = Grammar.from_regex(r"\\d{4}-\\d{2}-\\d{2}")
        >>> g.single_terminal().dfa.matches(b"2024-05-17")
        True
        """
        if isinstance(pattern, re.Pattern):
            pattern, flags = pattern.pattern, pattern.flags | flags
        # The regex is the whole text: a word boundary at an end reads its start or its end.
        terminal = Terminal("PATTERN", pattern, flags, whole_text=True)
        with applied(limits):
            if isinstance(pattern, str):
                check_size("max_grammar_chars", len(pattern), "the regex")
            terminal.dfa  # compile now so that errors surface at construction
        return cls(terminals=(terminal,), rules=(Rule("start", (("PATTERN",),)),), start="start",
                   source=pattern)

    @classmethod
    def from_choices(cls, choices: Sequence[str]) -> "Grammar":
        """Exactly one of ``choices``, taken literally (no regex meaning).

        >>> Grammar.from_choices(["yes", "no"]).single_terminal().dfa.matches(b"no")
        True
        """
        choices = list(choices)
        if not choices or not all(isinstance(choice, str) for choice in choices):
            raise GrammarError("choices must be a non-empty list of strings")
        terminal = Terminal.from_dfa("CHOICE", literal_dfa(choice.encode("utf-8") for choice in choices))
        return cls(terminals=(terminal,), rules=(Rule("start", (("CHOICE",),)),), start="start",
                   source=" | ".join(map(repr, choices)))

    @classmethod
    def from_lark(cls, text: str, *, start: str = "start", indentation: Indentation | None = None,
                  always_lexed: tuple[str, ...] = (), import_paths=(), parser: str = "lalr",
                  lexer: "str | None" = None, limits: "CompileLimits | None" = None) -> "Grammar":
        """A grammar written in Lark's EBNF; errors name the grammar line and column.
        ``limits`` bounds the work (see :class:`gramalign.CompileLimits`).

        ``parser`` and ``lexer`` say which of lark's parsers the language is that of:
        ``"lalr"`` (the default: lark's LALR(1) parser and contextual lexer; a grammar that
        is not LALR(1) is refused) or ``"earley"`` (lark's default parser: any context-free
        grammar, read by the generalized LR parser) with its ``"dynamic"`` lexer (the
        default: each terminal's own longest match) or ``"dynamic_complete"`` (every way the
        text splits into terminals).

        With ``indentation``, the grammar is laid out Python-style (see :class:`Indentation`)
        and its indent and dedent terminals must be ``%declare``-d. ``always_lexed`` names
        terminals the lexer tries in every parser state (see :attr:`Grammar.always_lexed`).
        ``import_paths`` lists directories ``%import`` searches first (lark's option); a
        relative ``%import .x`` then looks in the working directory (see :meth:`from_lark_file`).

        >>> g = Grammar.from_lark('start: "a" NUMBER\\nNUMBER: /[0-9]+/')
        >>> sorted(t.name for t in g.terminals)
        ['A', 'NUMBER']
        """
        from .lark_frontend import grammar_from_lark

        return grammar_from_lark(text, start=start, indentation=indentation, always_lexed=always_lexed,
                                 import_paths=tuple(import_paths), parser=parser, lexer=lexer, limits=limits)

    @classmethod
    def from_lark_file(cls, path, *, start: str = "start", indentation: Indentation | None = None,
                       always_lexed: tuple[str, ...] = (), import_paths=(), parser: str = "lalr",
                       lexer: "str | None" = None) -> "Grammar":
        """The Lark grammar in the file at ``path`` (UTF-8), as :meth:`from_lark` reads it,
        with relative imports (``%import .common.NAME``) resolved against the file's
        directory, as ``lark.Lark.open`` does.

        >>> import os, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> with open(os.path.join(folder, "words.lark"), "w") as f:
        ...     _ = f.write('WORD: /[a-z]+/\\n')
        >>> with open(os.path.join(folder, "main.lark"), "w") as f:
        ...     _ = f.write('start: WORD ("," WORD)*\\n%import .words.WORD\\n')
        >>> sorted(t.name for t in Grammar.from_lark_file(os.path.join(folder, "main.lark")).terminals)
        ['COMMA', 'WORD']
        """
        from .lark_frontend import grammar_from_lark_file

        return grammar_from_lark_file(path, start=start, indentation=indentation, always_lexed=always_lexed,
                                      import_paths=tuple(import_paths), parser=parser, lexer=lexer)

    @classmethod
    def from_gbnf(cls, text: str, *, start: str = "root", limits: "CompileLimits | None" = None) -> "Grammar":
        """A grammar in llama.cpp's GBNF (character-level rules, ``root`` the start); errors
        name the line and column. Any context-free GBNF loads, with llama.cpp's meaning (see
        :mod:`gramalign.grammar.gbnf_frontend`); ``limits`` bounds the work.

        >>> g = Grammar.from_gbnf('root ::= "a" [0-9]+ # a comment')
        >>> g.start
        'g:root'
        """
        from .gbnf_frontend import grammar_from_gbnf

        return grammar_from_gbnf(text, start=start, limits=limits)

    @classmethod
    def from_json_schema(cls, schema, **options) -> "Grammar":
        """The language of JSON texts that ``schema`` validates: a dict, bool or JSON string,
        or a Python type pydantic can describe (a model, dataclass, TypedDict, ``list[int]``;
        parse the output back with :func:`gramalign.parse_as`).

        Options (see ``docs/json_schema.md``): ``whitespace`` ("compact", the default, or
        "flexible"), ``max_whitespace`` (longest whitespace run on each side of a
        punctuation mark when flexible, default 8), ``string_escapes`` ("minimal" or "all"),
        ``property_order`` ("schema", the default, or "any"), ``indent`` and ``separators``
        (exactly ``json.dumps``'s layout; ``max_depth`` bounds the nesting indented exactly,
        default 32), ``default_draft`` (the draft of a schema without ``$schema``; by default
        2020-12 reading draft-07's array ``items`` and ``dependencies`` as draft-07 does),
        ``registry`` (the documents remote ``$ref``s name: a mapping of URIs to schemas or a
        ``referencing.Registry``; the meta-schemas come from ``jsonschema-specifications``,
        nothing is fetched over the network), ``integer_fraction`` (also accept
        ``3.0`` for an integer, default False), ``approximate`` (keywords the
        compiler may ignore instead of refusing: ``"uniqueItems"``, ``"format"``...), ``max_states``,
        ``limits`` (a :class:`gramalign.CompileLimits`: time, sizes; docs/limits.md),
        ``strict`` (default True): objects that say nothing about extra keys (no
        ``additionalProperties`` nor ``unevaluatedProperties``) are closed, as if
        ``additionalProperties`` were ``false`` (see :mod:`gramalign.grammar.json_schema.strict`),
        so a model cannot invent keys; ``strict=False`` keeps JSON Schema's meaning (extra keys
        allowed). No invalid instance is accepted either way.

        The schema's syntax and its root are checked here; its other parts are compiled
        where a parser first needs them (a :class:`~gramalign.grammar.json_schema.SchemaGrammar`,
        so a first mask costs the part of the schema it reads). A part that cannot be compiled
        exactly raises :class:`gramalign.SchemaCompileError`, naming the keyword and JSON
        pointer, from the matcher step that first reaches it (the matcher unchanged); for every
        error at once, call :meth:`whole` or ``gramalign.compile(..., eager=True)``.

        >>> g = Grammar.from_json_schema({"type": "object", "properties": {"n": {"type": "integer"}}})
        >>> g.start
        'start'
        """
        from ..heap import released_on_failure
        from .json_schema import compile_json_schema

        with released_on_failure():
            return compile_json_schema(schema, **options)

    @classmethod
    def builtin(cls, name: str, *, start: "str | None" = None, comments: bool = True) -> "Grammar":
        """A grammar shipped with gramalign: ``"json"``, ``"sql"`` or ``"python"``; ``start``
        another of its rules as the start, ``comments=False`` without ignored comments (see
        :func:`gramalign.grammar.builtin.load_builtin`).

        >>> Grammar.builtin("json").start
        'value'
        >>> Grammar.builtin("sql", start="select_stmt", comments=False).start
        'select_stmt'
        """
        from .builtin import load_builtin

        return load_builtin(name, start=start, comments=comments)

    def __hash__(self) -> int:
        # A large grammar's fields take milliseconds to hash, and one grammar keys several
        # caches (compiled grammars, parser tables) on every request that uses it: hashed once.
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash(tuple(getattr(self, f.name) for f in fields(self) if f.compare))
            object.__setattr__(self, "_hash", cached)
        return cached

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_hash", None)  # str hashes differ between processes
        state.pop(HANDED_TABLES_ATTRIBUTE, None)  # another process builds or is handed its own
        return state

    def whole(self) -> "Grammar":
        """This grammar with every rule written out: itself, but for a JSON Schema's grammar,
        whose rules are emitted where a parser first needs them (see
        :class:`gramalign.grammar.json_schema.SchemaGrammar`): that one emits them all here,
        and raises any error of the schema's parts."""
        return self

    def lazy_tables(self, limits: "CompileLimits | None" = None):
        """Parser tables built where the matchers go (:mod:`.parser_tables_lazy`), for a grammar
        whose rules are emitted on demand; None for a grammar whose rules are all here."""
        return None

    @property
    def terminal_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.terminals)

    def single_terminal(self) -> Terminal | None:
        """The terminal when the whole language is one regular terminal, else None."""
        if self.ignore:
            return None
        rules = {rule.name: rule for rule in self.rules}
        start = rules.get(self.start)
        if start is None or len(start.alternatives) != 1 or len(start.alternatives[0]) != 1:
            return None
        name = start.alternatives[0][0]
        terminal = next((t for t in self.terminals if t.name == name), None)
        if terminal is not None and (terminal.ends_in_word is not None or terminal.needs_text_after):
            # Its automaton reads a marker of the character before the lexeme first, or the
            # text may not end after it: only the parser's lexer knows what either means.
            return None
        return terminal
