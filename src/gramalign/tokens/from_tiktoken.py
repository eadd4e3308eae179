"""Token bytes of a ``tiktoken.Encoding``: its ranks are the raw bytes already.

Ids missing from a gapped range are unassigned, hence special; named special tokens are
special, and those with a conventional end name are the default EOS.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from gramalign.errors import VocabularyError

from .byte_conventions import KIND_TIKTOKEN
from .eos import CONVENTIONAL_EOS_NAMES
from .vocabulary import Vocabulary, assemble_vocabulary, type_name_of

if TYPE_CHECKING:  # pragma: no cover - imports for annotations only
    import tiktoken


def vocabulary_from_tiktoken(
    encoding: tiktoken.Encoding,
    *,
    vocab_size: int | None = None,
    eos_token_ids: int | Iterable[int] | None = None,
) -> Vocabulary:
    """:meth:`Vocabulary.from_tiktoken`, documented there."""
    if not hasattr(encoding, "decode_single_token_bytes") or not hasattr(encoding, "special_tokens_set"):
        raise VocabularyError(f"expected a tiktoken.Encoding, got {type_name_of(encoding)}")
    named_specials = {name: encoding.encode_single_token(name) for name in encoding.special_tokens_set}
    special_ids = set(named_specials.values())
    entries: list[bytes | None] = []
    for token_id in range(encoding.n_vocab):
        if token_id in special_ids:
            entries.append(b"")
            continue
        try:
            entries.append(encoding.decode_single_token_bytes(token_id))
        except KeyError:
            entries.append(None)
    default_eos = sorted(i for name, i in named_specials.items() if name in CONVENTIONAL_EOS_NAMES)
    return assemble_vocabulary(
        kind=KIND_TIKTOKEN,
        entries=entries,
        special_ids=special_ids,
        vocab_size=vocab_size,
        eos_token_ids=eos_token_ids,
        default_eos_ids=default_eos,
        add_prefix_space=False,
        source=f"tiktoken encoding {encoding.name!r}",
    )
