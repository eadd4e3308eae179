"""Where a grammar meets a vocabulary: token masks, and the matchers that serve them.

In the order a call reaches them:

- :mod:`.compiler`: ``compile(grammar, vocabulary)`` -> :class:`CompiledGrammar`, shared
  and thread-safe; a grammar that is one regex gets a :mod:`.regex_index`, any other a
  CFG mask store (:mod:`.cfg`).
- :mod:`.matcher`: :class:`GrammarMatcher`, one sequence's state (accept tokens, fill the
  next mask, roll back, fork, verify drafts); :mod:`.batch`: one matcher per batch row.
- :mod:`.bitmask`: the int32 ``[batch, ceil(V / 32)]`` layout (numpy helpers).
- :mod:`.gc_guard` (garbage collection paused during fills) and :mod:`.warm_up`
  (every kernel loaded at server start).

The vocabulary side (token bytes, EOS ids, the token trie) is ``gramalign.tokens``; the
parser the masks follow is ``gramalign.parsing``.
"""
