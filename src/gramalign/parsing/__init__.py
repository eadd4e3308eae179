"""The runtime parser: a grammar's :class:`~gramalign.grammar.parser_tables.ParserTables`
run one byte at a time, byte-level longest-match lexing and LALR(1) together.

In the order a byte reaches them:

- :mod:`.incremental`: :class:`IncrementalParser`, the Python face (feed bytes, ask whether
  the text can end); matchers hold one, tests use it as the byte-by-byte oracle.
- :mod:`.hypotheses`: the numba kernels of the byte step over a set of hypotheses (the
  lexemes that may end here or go on, their shadows, merging equal ones), shared with the
  mask walk of ``masking/``.
- :mod:`.lexing`: one byte through the lexer DFA, with its column and code-point counters;
  the terminals a lexer state can still end as.
- :mod:`.stacks`: parser stacks as persistent linked lists in a node pool
  (:class:`StackPool`), and the LR step (reduce, then shift) on them.
- :mod:`.state`: the layout of a hypothesis row and the kernels' status codes.

The tables themselves are analysis and live in ``grammar/`` (``parser_tables.py``), which
never imports this package.
"""

from .incremental import IncrementalParser
from .stacks import StackPool

__all__ = ["IncrementalParser", "StackPool"]
