"""The regular-language toolkit: regexes to byte automata and the algebra on them.

It knows no grammar; the front ends, the lexer and the JSON Schema compiler build on it.
In the order a regex reaches them:

- :mod:`.regex`: Python regex syntax (``re``'s own parser) to an NFA over code points, then
  to a byte NFA; :mod:`.lookaround` reads lookaheads, lookbehinds and word boundaries
  inside a match as marker bytes; :mod:`.first_match` gives the lexemes ``re.match``
  returns where that is not the longest match (lazy quantifiers, alternation order).
- :mod:`.dfa`: :class:`~.dfa.ByteDFA` (an int32 [states, 256] table), determinising,
  trimming, minimising; its numba kernels in :mod:`.kernels`, with the member-set hash
  table in :mod:`.member_sets` (which the lexer and LR kernels share).
- :mod:`.algebra`: intersection, union, difference, complement, concatenation, repeats,
  bounded in states; :mod:`.cache`: process-wide caches of automata keyed by content.
"""
