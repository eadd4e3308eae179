"""Token masks of a context-free grammar (a Lark or GBNF grammar, a JSON Schema).

In the order a mask reaches them:

- :mod:`.store`: :class:`GrammarMaskStore`, a compiled grammar's masks; ``fill`` writes the
  row for a parser state from the parts below (and fast paths for states seen before).
- :mod:`.contexts`: each lexical context's token classes (inside groups, dependent tokens),
  classified on first use by the numba kernels of :mod:`.trie_walk`.
- :mod:`.stack_parts`: what the stack allows of a context's classes, cached under the top
  of the stack the computation read.
- :mod:`.text_blocks`: plain-text tokens taken as precomputed blocks where a context reads
  any text; :mod:`.shared_contexts`: classifications shared by every grammar of a
  vocabulary; :mod:`.counted_strings`: length bounds as a filter on those masks.
- :mod:`.disk_cache`: contexts saved and loaded for servers that restart.
"""

from .store import GrammarMaskStore

__all__ = ["GrammarMaskStore"]
