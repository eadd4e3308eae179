"""Jump-forward: write the text the grammar forces without asking the model.

When every continuation of the text starts with the same bytes (``"name": "`` after ``{``
in a schema with one required key), those bytes need no forward pass. Two details keep the
model's view natural:

* the forced text is re-tokenized together with the last tokens before it, so the model
  sees the tokenizer's own (canonical) tokenization across the boundary, not the tokens
  that happened to be sampled before the jump;
* the last token of that re-tokenization is dropped, because it could merge with the text
  the model writes next (``": "`` followed by a quote may be one token); the mask still
  forces those bytes at the next step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from ..masking.matcher import GrammarMatcher


@dataclass(frozen=True)
class JumpForward:
    """Replace the last ``rollback`` tokens of the sequence by ``token_ids`` (the matcher has
    already done so); ``forced`` is the text the grammar forced."""

    rollback: int
    token_ids: tuple[int, ...]
    forced: bytes


def jump_forward(matcher: GrammarMatcher, encode: Callable[[str], Sequence[int]], recent_token_ids: Sequence[int],
                 *, lookback: int = 2, max_bytes: int = 256) -> JumpForward | None:
    """Advance ``matcher`` over the forced text, re-tokenized canonically; None when nothing is forced.

    ``encode`` turns text into token ids without special tokens (e.g.
    ``lambda s: tokenizer.encode(s, add_special_tokens=False)``); ``recent_token_ids`` are the
    last tokens the matcher accepted (at least ``lookback`` of them when there are so many).
    The caller replaces the last ``rollback`` tokens of its sequence (and KV cache) by
    ``token_ids``. When the tokenizer cannot spell the text back byte for byte (a
    SentencePiece prefix space, say), the jump uses fewer look-back tokens or none.
    """
    forced = matcher.forced_bytes(max_bytes)
    if not forced:
        return None
    vocab = matcher.compiled.vocabulary
    recent = [int(t) for t in recent_token_ids][-lookback:] if lookback > 0 else []
    if len(recent) > matcher.num_accepted_tokens:
        raise ValueError(f"{len(recent)} recent tokens but the matcher accepted only {matcher.num_accepted_tokens}")
    for back in range(len(recent), -1, -1):
        tail = vocab.decode_bytes(recent[len(recent) - back:])
        try:
            text = (tail + forced).decode("utf-8")
        except UnicodeDecodeError:
            continue  # the look-back cuts a character: look back less
        tokens = [int(t) for t in encode(text)]
        if vocab.decode_bytes(tokens) != tail + forced:
            continue
        keep = tokens[:-1]
        if len(vocab.decode_bytes(keep)) <= len(tail):
            continue  # nothing gained over what is already there
        if _replace(matcher, back, recent[len(recent) - back:], keep):
            return JumpForward(back, tuple(keep), forced)
    return None


def _replace(matcher: GrammarMatcher, back: int, old: list[int], new: list[int]) -> bool:
    """Swap the last ``back`` tokens (``old``) for ``new``; False, with the matcher as it was, if refused."""
    matcher.rollback(back)
    for done, token in enumerate(new):
        if not matcher.try_accept_token(token):
            matcher.rollback(done)
            for token_again in old:
                matcher.accept_token(token_again)
            return False
    return True
