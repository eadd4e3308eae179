"""What a parser state is: int32 rows of hypotheses, node ids, and the kernels' status codes.

A hypothesis is a row of int32 values: the parser stack (a node id, see :mod:`.stacks`), the
lexer state of the current lexeme, two shadow slots (lexer state, parser state whose
candidates apply; -1 when free; more slots, when needed, follow the ``HYPOTHESIS_FIELDS``
fixed fields, see :func:`shadow_column`) and, for grammars with an
:class:`~gramalign.grammar.grammar.Indentation` layout, the bracket depth, the column of
the current newline lexeme (0 in any other lexeme; the code points so far in a counted
string terminal) and the stack of open blocks' columns (a node id, -1 for none).
"""

from __future__ import annotations

import numpy as np

from ..jit import kernel

HYPOTHESIS_FIELDS = 9
STACK, LEXEME, SHADOW1, SHADOW1_PARSER, SHADOW2, SHADOW2_PARSER, BRACKETS, COLUMN, BLOCKS = range(HYPOTHESIS_FIELDS)
SCRATCH_BASE = 1 << 29  # node ids from here up live in the scratch pool (look-ahead only)
INITIAL_HYPOTHESES = 16  # rows a parser's state arrays start with; they grow when text needs more

# Status codes of the kernels.
OK = 0
POOL_FULL = 1  # the committed pool needs to grow: grow it and call again
SCRATCH_FULL = 2  # the scratch pool needs to grow
SHADOWS_FULL = 3  # a hypothesis needs more shadow slots: widen the rows and call again
HYPOTHESES_FULL = 4  # more live hypotheses than the output rows hold: more rows and call again
FORK_LIMIT = 5  # a generalized parser's forks took too much work on one terminal: an error
NEED_STATE = 6  # a stack landed in a parser state not built yet (exposed[1]): build it and call again


@kernel(inline="always")
def shadow_column(k):
    """The column of shadow slot ``k`` of a hypothesis row (its parser state is the next one):
    slots 0 and 1 are the fixed SHADOW1/SHADOW2 fields, more follow the fixed fields."""
    return SHADOW1 + 2 * k if k < 2 else HYPOTHESIS_FIELDS + 2 * (k - 2)


@kernel(inline="always")
def shadow_slots(width):
    """Shadow slots of a hypothesis row ``width`` int32 values wide."""
    return 2 + (width - HYPOTHESIS_FIELDS) // 2


def widen(hyps: np.ndarray) -> np.ndarray:
    """``hyps`` with one more (free) shadow slot per row."""
    return np.concatenate([hyps, np.full((hyps.shape[0], 2), -1, dtype=np.int32)], axis=1)


def narrowest(hyps: np.ndarray) -> np.ndarray:
    """A copy of ``hyps`` with only the shadow slots some row uses beyond the two fixed ones
    (the kernels fill slots in order), so states are as wide as their ambiguity needs."""
    extra = hyps[:, HYPOTHESIS_FIELDS::2] >= 0
    used = np.flatnonzero(extra.any(axis=0))
    width = HYPOTHESIS_FIELDS + 2 * (int(used[-1]) + 1 if used.size else 0)
    return hyps[:, :width].copy()
