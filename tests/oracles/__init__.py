"""Independent oracles: sources of truth that share nothing with the code they judge.

Each one decides the same question as a part of gramalign in another way, so that a test can
compare the two answers:

- ``lark_lalr``: lark's own LALR(1) analyser (what ``gramalign.grammar.lalr`` ran before its
  integer construction), with ``canonical`` to compare parse tables entry by entry.
- ``python_layout``: lark's LALR parser with an indentation post-lexer written from
  gramalign's documented layout rules, for the shipped Python grammar; plus the
  standard-library files it accepts and random programs of the grammar.
- ``gbnf``: an Earley recognizer written from the GBNF definition, run on the rules' syntax
  trees with none of gramalign's IR, lexer or LALR table (sentences and viable prefixes, one
  character at a time); a bottom-up enumeration of short sentences to check it; plus random
  sentences.
- ``random_cfg``: random context-free grammars as GBNF text (seeded), each with shapes LALR(1)
  cannot read (ambiguity, nullable and hidden left recursion, unit and empty cycles, ...).
- ``brute_force_masks``: a mask computed the slow way, feeding every token's bytes to the
  incremental parser one at a time (no trie, no mask store).
- ``bar_hillel_worklist``: the infilling check's emptiness test as it was before the Earley
  kernels, a bottom-up Bar-Hillel worklist in pure Python over the same lexing automaton.
- ``exact_laws``: the exact output laws of the samplers on a toy model, by enumerating
  every complete sequence.

Other oracles are packages used directly by the tests (``jsonschema``, ``re``/``regex``,
``interegular``, pydantic, Python's ``ast``, the JSON-Schema-Test-Suite).
"""
