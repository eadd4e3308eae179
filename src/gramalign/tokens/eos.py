"""Which token ids end a sequence, and the checks every EOS choice passes.

A tokenizer that declares no EOS (a raw ``tokenizers`` object, a tiktoken encoding) gets
the added special tokens with a conventional end name; every EOS list is checked to be
non-empty and inside the logits width. A tokenizer whose EOS is named like a start marker
(``<|im_start|>``, ``<s>``, as in SmolLM2's GGUF tokenizer) ends with the special token its
chat template closes an assistant turn with; without such a template it is warned about,
since generation would then never end where the grammar allows.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from gramalign.errors import VocabularyError

if TYPE_CHECKING:  # pragma: no cover - imports for annotations only
    import tokenizers

# Names under which tokenizers without an explicit eos setting (raw ``tokenizers`` and
# tiktoken objects) mark the end of a sequence or of a chat turn.
CONVENTIONAL_EOS_NAMES = frozenset(
    {
        "</s>",
        "<eos>",
        "<|endoftext|>",
        "<|end_of_text|>",
        "<|eot_id|>",
        "<|eom_id|>",
        "<|im_end|>",
        "<|end|>",
        "<end_of_turn>",
    }
)


def valid_ids(ids: Iterable[int | None]) -> list[int]:
    """Drop the ``None``/negative values libraries use for "no such token"."""
    return [int(i) for i in ids if i is not None and int(i) >= 0]


_START_MARKER = re.compile(r"start|begin|^<s>$|^<bos>$", re.IGNORECASE)


def start_markers(tokenizer: Any, eos_ids: Sequence[int]) -> list[str]:
    """The names among ``eos_ids`` that read like the start of a text or turn."""
    try:
        names = tokenizer.convert_ids_to_tokens(list(eos_ids))
    except Exception:  # a foreign tokenizer without the method: nothing to judge by
        return []
    return [name for name in names if isinstance(name, str) and _START_MARKER.search(name)]


# Content no chat template produces by itself, so its position in the rendered text is the
# assistant's reply and what follows it is how the template closes the turn.
_REPLY_SENTINEL = "\u2063gramalign-reply\u2063"


def chat_turn_end_ids(tokenizer: Any) -> list[int]:
    """The special token the tokenizer's chat template ends an assistant turn with, if any.

    The template is rendered for one user and one assistant message and the added token
    that follows the reply (after optional whitespace) is taken, unless it is itself named
    like a start marker: that is the token the model was trained to stop with.
    """
    if not getattr(tokenizer, "chat_template", None) or not hasattr(tokenizer, "apply_chat_template"):
        return []
    try:
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": _REPLY_SENTINEL}], tokenize=False)
        added = {str(token): int(token_id) for token_id, token in tokenizer.added_tokens_decoder.items()}
    except Exception:  # a template that needs other roles or arguments: no answer, not an error
        return []
    if not isinstance(text, str) or _REPLY_SENTINEL not in text:
        return []
    after = text[text.index(_REPLY_SENTINEL) + len(_REPLY_SENTINEL):].lstrip()
    ends = [name for name in added if name and after.startswith(name) and not _START_MARKER.search(name)]
    return [added[max(ends, key=len)]] if ends else []


def warn_start_marker_eos(name: str, *, source: str) -> None:
    """Warn that the tokenizer's EOS ``name`` is a start marker and nothing better was found."""
    warnings.warn(
        f"the {source}'s eos_token is {name!r}, which looks like a start marker, and it has no chat template "
        "that names the end of a turn: generation would not end where the grammar allows. Build the vocabulary "
        "with gramalign.vocabulary_for_model(tokenizer, model) (the model's generation config names the real "
        "EOS) or pass eos_token_ids=",
        UserWarning, stacklevel=4)  # the caller of Vocabulary.from_hf, past vocabulary_from_hf


def check_eos_ids(eos_ids: Sequence[int], size: int) -> None:
    if not eos_ids:
        raise VocabularyError("at least one eos token id is required")
    for token_id in eos_ids:
        if not 0 <= token_id < size:
            raise VocabularyError(f"eos token id {token_id} is out of range [0, {size})")


def conventional_eos_ids(tokenizer: tokenizers.Tokenizer) -> list[int]:
    """Added special tokens named like an end of sequence or of a chat turn."""
    added = tokenizer.get_added_tokens_decoder()
    return sorted(
        token_id
        for token_id, token in added.items()
        if token.special and token.content in CONVENTIONAL_EOS_NAMES
    )
