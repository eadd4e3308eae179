"""What a language is, independent of any tokenizer.

In the order a compile reaches them:

- Front ends to the grammar IR (:mod:`.grammar`: terminals as regexes, BNF rules, start,
  ignored terminals, an optional indentation layout): :mod:`.lark_frontend` (Lark EBNF,
  with :mod:`.automata.first_match` and :mod:`.automata.lookaround` for lark's lazy quantifiers and
  lookarounds), :mod:`.gbnf_frontend` (llama.cpp GBNF), :mod:`.json_schema` (JSON Schema),
  :mod:`.builtin` (the shipped grammars in ``grammars/``), ``Grammar.from_regex``.
- Regexes to byte automata: the sub-package :mod:`.automata` (``regex``, ``lookaround``,
  ``first_match``, ``dfa`` with its ``kernels`` and ``member_sets``, ``algebra``, ``cache``),
  which knows no grammar.
- Analysis: :mod:`.lexer` (every terminal in one product DFA, kernels in
  :mod:`.lexer_kernels`, shared starts in :mod:`.lexer_starts`), :mod:`.lalr` (the LALR(1)
  table lark builds, kernels in :mod:`.lalr_kernels`), and :mod:`.parser_tables`, which
  joins them into the arrays the runtime parser (``gramalign.parsing``) reads.
- :mod:`.limits`: the budgets every step above checks (time inside the loops, sizes before
  the work).

Nothing here imports ``parsing/``, ``masking/`` or torch.
"""
