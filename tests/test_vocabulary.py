"""Vocabulary: token bytes recovered from real tokenizers must match what they decode."""

from __future__ import annotations

import functools
import json
import random
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from support import tokenizer_zoo as zoo

from gramalign.errors import VocabularyError
from gramalign.tokens import Vocabulary

TEXT_COUNT = 2000
TEXT_SEED = 20240911

# --------------------------------------------------------------- test texts

_WORDS = (
    "the quick brown fox jumps over lazy dog Hello World don't it's we'll I'm they've "
    "token grammar constrained generation JSON schema value null true false API HTTP "
    "a an of to in is was for on with as by at from or be this that CamelCase snake_case "
    "URL https example com 42 3.14159 1e-9 -17 0x1F 2024-09-11 12:30:00 v1.2.3 foo bar baz"
).split()
_ACCENTED = (
    "café naïve Ångström Zürich señor crème brûlée Øresund Łódź straße façade résumé "
    "Ελληνικά русский язык Україна çà et là e\u0301 a\u0308 n\u0303 ǅ ﬁ Ⅻ"
).split()
_CJK = (
    "中文", "日本語のテキスト", "한국어 문장", "漢字", "カタカナ",
    "ひらがな", "。", "，", "「引用」", "中文，English混合",
)
_OTHER_SCRIPTS = (
    "العربية", "עברית", "हिन्दी", "ไทย", "ქართული", "አማርኛ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𓀀𓁐", "∑∫√∞≠≤",
    "€£¥₹₿", "→⇒↔", "½¾", "™©®", "µ§¶", "\U0010fffd", "\ue000",
)
_EMOJI = (
    "🙂", "😀", "👍🏽", "👨\u200d👩\u200d👧\u200d👦", "🏳️\u200d🌈", "🇫🇷", "🇯🇵", "❤️", "🧑🏿\u200d💻",
    "🐍", "✨", "👩🏻\u200d🔬", "🫠", "©️", "1️⃣", "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",
)
_CONTROL = (
    "\x00", "\x01", "\x07", "\x08", "\x1b", "\x1f", "\x7f", "\x85", "\x9f", "\u200b", "\u200d",
    "\u200e", "\ufeff", "\u00ad", "\u00a0", "\r", "\x0c", "\x0b", "\u2028", "\u3000", "\ufffd",
)
_WHITESPACE = (" ", "  ", "    ", "\t", "\n", "\r\n", "\n\n", " \n", "\t\t")
_CODE = (
    "def add(x, y):\n    return x + y\n",
    "for (let i = 0; i < n; i++) {\n\tsum += a[i];\n}\n",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
    "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); }",
    "fn main() { println!(\"héllo {}\", x); }",
    '<div class="box">\n  <p>Text &amp; more</p>\n</div>',
    r"^\d{4}-\d{2}-\d{2}$|[A-Za-z_]\w*",
    "if x != None and y['key'] == \"v\":\n\tpass",
    "$ echo \"$HOME\" | grep -v '^#' > /dev/null 2>&1",
    "    @property\n    def name(self) -> str:  # comment\n        ...",
    "a = [1, 2, 3]; b = {'k': (4, 5)}; c = a[::-1]",
    "```python\nprint('hi')\n```",
)


def _random_json(rng: random.Random, depth: int = 0) -> Any:
    choice = rng.randrange(7 if depth < 3 else 4)
    if choice == 0:
        return rng.randint(-10**6, 10**6)
    if choice == 1:
        return round(rng.uniform(-1000, 1000), rng.randrange(6))
    if choice == 2:
        return rng.choice([True, False, None])
    if choice == 3:
        return _fragment(rng, allow_json=False)
    if choice in (4, 5):
        return {_fragment(rng, allow_json=False)[:12]: _random_json(rng, depth + 1) for _ in range(rng.randrange(4))}
    return [_random_json(rng, depth + 1) for _ in range(rng.randrange(4))]


def _sentence(rng: random.Random, words: tuple[str, ...] | list[str], joiner: str = " ") -> str:
    return joiner.join(rng.choice(words) for _ in range(rng.randint(1, 8)))


def _fragment(rng: random.Random, *, allow_json: bool = True) -> str:
    category = rng.randrange(10 if allow_json else 9)
    if category == 0:
        sentence = _sentence(rng, _WORDS)
        return sentence.capitalize() + rng.choice(("", ".", "!", "?", ",", ":"))
    if category == 1:
        return _sentence(rng, _ACCENTED)
    if category == 2:
        return _sentence(rng, _CJK, joiner="")
    if category == 3:
        return _sentence(rng, _OTHER_SCRIPTS, joiner=rng.choice(("", " ")))
    if category == 4:
        return _sentence(rng, _EMOJI, joiner=rng.choice(("", " ")))
    if category == 5:
        return rng.choice(_WORDS) + "".join(rng.choice(_CONTROL) for _ in range(rng.randint(1, 3))) + rng.choice(_WORDS)
    if category == 6:
        return "".join(rng.choice(_WHITESPACE) for _ in range(rng.randint(1, 6)))
    if category == 7:
        return rng.choice(_CODE)
    if category == 8:
        # Random code points from several planes, skipping surrogates (not encodable).
        points = [rng.choice((rng.randrange(0x20, 0x7F), rng.randrange(0xA0, 0x3000), rng.randrange(0x1F300, 0x1FAFF)))
                  for _ in range(rng.randint(1, 6))]
        return "".join(chr(p) for p in points)
    return json.dumps(_random_json(rng), ensure_ascii=rng.random() < 0.3, indent=rng.choice((None, None, 2, "\t")))


@functools.lru_cache(maxsize=None)
def varied_texts(count: int = TEXT_COUNT, seed: int = TEXT_SEED) -> tuple[str, ...]:
    """Deterministic, non-empty texts mixing every category (none spells an added token)."""
    rng = random.Random(seed)
    texts = []
    while len(texts) < count:
        pieces = [_fragment(rng) for _ in range(rng.choice((1, 1, 2, 3, 5)))]
        text = "".join(piece + rng.choice(("", "", " ", "\n", "\t")) for piece in pieces)
        if rng.random() < 0.15:
            text = rng.choice(_WHITESPACE) + text
        if text:
            texts.append(text)
    return tuple(texts)


def test_texts_are_deterministic_and_varied():
    texts = varied_texts()
    assert len(texts) == TEXT_COUNT and texts == varied_texts.__wrapped__()
    joined = "".join(texts)
    for marker in ("é", "中", "👨\u200d👩", "\x00", "\t", "\n\n", "{\"", "def "):
        assert marker in joined, marker
    assert not any("<|" in text or "<s>" in text or "</s>" in text for text in texts)


# ------------------------------------------------------------ round trips


@dataclass(frozen=True)
class Case:
    """One tokenizer: how to load it, build its Vocabulary, encode and decode with it."""

    name: str
    load: Callable[[], Any]
    build: Callable[[Any], Vocabulary]
    encode_all: Callable[[Any, list[str]], list[list[int]]]
    decode: Callable[[Any, list[int]], str]
    text_count: int = TEXT_COUNT


def _hf_encode_all(tokenizer, texts):
    return [list(ids) for ids in tokenizer(list(texts), add_special_tokens=False)["input_ids"]]


def _hf_decode(tokenizer, ids):
    return tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)


def _tokenizers_encode_all(tokenizer, texts):
    return [encoding.ids for encoding in tokenizer.encode_batch(list(texts), add_special_tokens=False)]


def _tokenizers_decode(tokenizer, ids):
    return tokenizer.decode(ids, skip_special_tokens=False)


def _sentencepiece_encode_all(processor, texts):
    return processor.encode(list(texts))


def _sentencepiece_decode(processor, ids):
    return processor.decode(ids)


def _mistral_inner(tokenizer):
    return tokenizer.instruct_tokenizer.tokenizer


def _mistral_encode_all(tokenizer, texts):
    inner = _mistral_inner(tokenizer)
    return [inner.encode(text, bos=False, eos=False) for text in texts]


def _mistral_decode(tokenizer, ids):
    return _mistral_inner(tokenizer).decode(ids)


def _tiktoken_encode_all(encoding, texts):
    return encoding.encode_ordinary_batch(list(texts))


def _tiktoken_decode(encoding, ids):
    return encoding.decode(ids)


HF = (Vocabulary.from_hf, _hf_encode_all, _hf_decode)
CASES = {
    case.name: case
    for case in (
        Case("gpt2-hf", zoo.gpt2_hf, *HF),
        Case("gpt2-hf-fast", zoo.gpt2_hf_fast, *HF),
        Case("gpt2-hf-slow", zoo.gpt2_hf_slow, *HF),
        Case("gpt2-tiktoken", zoo.gpt2_tiktoken, Vocabulary.from_tiktoken, _tiktoken_encode_all, _tiktoken_decode),
        Case("llama3-hf", zoo.llama3_hf, *HF),
        Case("llama3-tokenizers", zoo.llama3_tokenizers, Vocabulary.from_tokenizers,
             _tokenizers_encode_all, _tokenizers_decode),
        Case("qwen-hf", zoo.qwen_hf, *HF),
        Case("mistral-v1-sentencepiece", zoo.mistral_v1_sentencepiece, Vocabulary.from_sentencepiece,
             _sentencepiece_encode_all, _sentencepiece_decode),
        Case("mistral-v1-common", zoo.mistral_v1_common, Vocabulary.from_mistral, _mistral_encode_all, _mistral_decode),
        Case("tekken", zoo.tekken, Vocabulary.from_mistral, _mistral_encode_all, _mistral_decode),
        Case("llama2-style-hf", zoo.llama2_style_hf, *HF),
        Case("llama-metaspace-hf", zoo.llama_metaspace_hf, *HF),
        # transformers 5's generic SentencePieceBackend.decode is lossy (it strips all
        # surrounding whitespace and leaves <0xNN> pieces as text), so its own sp_model
        # serves as the decoder.
        Case("sentencepiece-hf-slow", zoo.sentencepiece_hf_slow, Vocabulary.from_hf, _hf_encode_all,
             lambda tokenizer, ids: tokenizer.sp_model.decode(ids)),
        # ByT5 is a byte tokenizer with a slow Python decoder: fewer texts suffice.
        Case("byt5-hf", zoo.byt5_hf, *HF, text_count=500),
    )
}


def loaded(name: str) -> Any:
    tokenizer = CASES[name].load()
    if tokenizer is None:
        pytest.skip(f"{name} cannot be built with the installed libraries")
    return tokenizer


@functools.lru_cache(maxsize=None)
def vocabulary(name: str) -> Vocabulary:
    return CASES[name].build(loaded(name))


def assert_round_trips(vocab: Vocabulary, encode_all, decode, tokenizer, texts) -> None:
    mismatches = []
    for text, ids in zip(texts, encode_all(tokenizer, texts), strict=True):
        ids = list(ids)
        expected = decode(tokenizer, ids).encode("utf-8")
        if vocab.add_prefix_space and ids:
            # SentencePiece-style tokenizers encode text with a "dummy prefix" (a leading
            # "▁") and their decoders strip that one space again, so the tokens' bytes
            # carry exactly one more leading space than the decoded text.
            expected = b" " + expected
        actual = vocab.decode_bytes(ids)
        if actual != expected:
            mismatches.append((text, ids, actual, expected))
    assert not mismatches, f"{len(mismatches)} of {len(texts)} texts differ; first: {mismatches[0]}"


@pytest.mark.parametrize("name", list(CASES))
def test_token_bytes_concatenate_to_the_decoded_text(name):
    tokenizer = loaded(name)
    case = CASES[name]
    texts = varied_texts()[: case.text_count]
    assert_round_trips(vocabulary(name), case.encode_all, case.decode, tokenizer, texts)


@pytest.mark.parametrize("name", list(CASES))
def test_specials_are_empty_and_never_grammar_tokens(name):
    vocab = vocabulary(name)
    assert vocab.special_token_ids, "every real tokenizer has at least one special token"
    for token_id in vocab.special_token_ids:
        assert vocab.token_bytes[token_id] == b""
    grammar_ids = vocab.grammar_token_ids()
    assert grammar_ids.dtype == np.int32 and not grammar_ids.flags.writeable
    assert np.all(np.diff(grammar_ids) > 0)
    assert not set(grammar_ids.tolist()) & vocab.special_token_ids
    assert all(vocab.token_bytes[i] for i in grammar_ids.tolist())
    assert len(grammar_ids) == sum(1 for data in vocab.token_bytes if data)


@pytest.mark.parametrize("name", list(CASES))
def test_every_single_byte_is_a_token(name):
    # Byte-level BPE, byte-fallback SentencePiece and tiktoken can all spell any byte
    # string, which grammars rely on; a wrong alphabet mapping breaks this first.
    vocab = vocabulary(name)
    single_bytes = {data for data in vocab.token_bytes if len(data) == 1}
    assert len(single_bytes) == 256


def test_byt5_maps_ids_to_bytes():
    vocab = vocabulary("byt5-hf")
    tokenizer = loaded("byt5-hf")
    assert vocab.kind == "raw"
    assert [vocab.token_to_bytes(tokenizer.offset + value) for value in (0, 65, 255)] == [b"\x00", b"A", b"\xff"]
    assert vocab.eos_token_ids == (tokenizer.eos_token_id,)
    assert set(range(tokenizer.offset)) <= vocab.special_token_ids


# ------------------------------------------------------ per-tokenizer facts


def test_known_token_bytes():
    gpt2 = vocabulary("gpt2-hf")
    assert gpt2.kind == "byte_level" and not gpt2.add_prefix_space
    assert gpt2.token_to_bytes(gpt2_id("Ġthe")) == b" the"
    assert gpt2.token_to_bytes(gpt2_id("Ċ")) == b"\n"
    assert gpt2.token_to_bytes(gpt2_id("Ã©")) == "é".encode()

    llama3 = vocabulary("llama3-tokenizers")
    assert llama3.token_to_bytes(zoo.llama3_tokenizers().token_to_id("ĊĊ")) == b"\n\n"

    mistral = vocabulary("mistral-v1-sentencepiece")
    processor = zoo.mistral_v1_sentencepiece()
    assert mistral.kind == "sentencepiece" and mistral.add_prefix_space
    assert mistral.token_to_bytes(processor.piece_to_id("<0x0A>")) == b"\n"
    assert mistral.token_to_bytes(processor.piece_to_id("<0xE2>")) == b"\xe2"
    assert mistral.token_to_bytes(processor.piece_to_id("▁the")) == b" the"
    assert mistral.special_token_ids == {0, 1, 2}  # <unk> (unknown), <s>, </s> (control)

    tekken = vocabulary("tekken")
    assert tekken.kind == "tekken" and not tekken.add_prefix_space
    assert tekken.special_token_ids == set(range(1000))
    assert [tekken.token_to_bytes(1000 + value) for value in (0, 32, 255)] == [b"\x00", b" ", b"\xff"]


def gpt2_id(piece: str) -> int:
    return zoo.gpt2_hf_fast().convert_tokens_to_ids(piece)


def test_added_tokens_are_special_even_when_not_marked_special():
    qwen = zoo.qwen_hf()
    vocab = vocabulary("qwen-hf")
    added = qwen.added_tokens_decoder
    assert any(not token.special for token in added.values()), "Qwen has non-special added tokens like <think>"
    for token_id in added:
        assert token_id in vocab.special_token_ids and vocab.token_bytes[token_id] == b""
    assert vocab.num_tokens == len(qwen) == 151669
    assert len(vocab.grammar_token_ids()) == 151643


def test_llama3_specials_and_sizes():
    vocab = vocabulary("llama3-tokenizers")
    assert vocab.num_tokens == vocab.size == 128257
    assert vocab.special_token_ids == set(range(128000, 128257))
    # A raw tokenizers.Tokenizer has no eos setting: conventional end names are used.
    assert vocab.eos_token_ids == (128001, 128008, 128009)  # end_of_text, eom_id, eot_id


def test_mistral_routes_agree():
    # The same model reached through different libraries gives the same vocabulary.
    raw = vocabulary("mistral-v1-sentencepiece")
    assert vocabulary("mistral-v1-common").fingerprint == raw.fingerprint
    assert Vocabulary.from_mistral(zoo.mistral_v1_common().instruct_tokenizer.tokenizer).fingerprint == raw.fingerprint
    assert Vocabulary.from_sentencepiece(zoo.mistral_v1_model_path()).fingerprint == raw.fingerprint
    assert vocabulary("llama2-style-hf").token_bytes == raw.token_bytes
    assert vocabulary("sentencepiece-hf-slow").token_bytes == raw.token_bytes

    tekken = vocabulary("tekken")
    assert Vocabulary.from_hf(zoo.tekken_hf()).fingerprint == tekken.fingerprint
    assert Vocabulary.from_mistral(_mistral_inner(zoo.tekken())).fingerprint == tekken.fingerprint


def test_tekken_bytes_match_its_own_byte_pieces():
    inner = _mistral_inner(zoo.tekken())
    vocab = vocabulary("tekken")
    rng = random.Random(7)
    for token_id in rng.sample(range(inner.num_special_tokens, inner.n_words), 2000):
        data = vocab.token_bytes[token_id]
        assert data == inner.id_to_byte_piece(token_id)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        assert inner.decode([token_id]) == text


def test_from_any_dispatches_on_type():
    for name in ("gpt2-hf", "gpt2-tiktoken", "llama3-tokenizers", "mistral-v1-sentencepiece", "tekken"):
        assert Vocabulary.from_any(loaded(name)).fingerprint == vocabulary(name).fingerprint
    from_path = Vocabulary.from_any(zoo.mistral_v1_model_path())
    assert from_path.fingerprint == vocabulary("mistral-v1-sentencepiece").fingerprint


def test_building_is_fast():
    tokenizer = zoo.qwen_hf()
    start = time.perf_counter()
    Vocabulary.from_hf(tokenizer)
    elapsed = time.perf_counter() - start
    # About 0.2 s on a 2-core machine; the bound only catches per-token slow paths.
    assert elapsed < 3.0, f"building a 151k-token vocabulary took {elapsed:.2f} s"


# ------------------------------------------------------------------ eos


def test_default_eos_comes_from_the_tokenizer():
    assert vocabulary("gpt2-hf").eos_token_ids == (50256,)
    assert vocabulary("gpt2-tiktoken").eos_token_ids == (50256,)
    assert vocabulary("qwen-hf").eos_token_ids == (zoo.qwen_hf().eos_token_id,)
    assert vocabulary("mistral-v1-sentencepiece").eos_token_ids == (2,)
    assert vocabulary("tekken").eos_token_ids == (2,)


def test_explicit_eos_ids():
    tokenizer = zoo.llama3_hf()
    assert Vocabulary.from_hf(tokenizer, eos_token_ids=128009).eos_token_ids == (128009,)
    several = Vocabulary.from_hf(tokenizer, eos_token_ids=[128009, 128001, 128009])
    assert several.eos_token_ids == (128009, 128001)
    assert Vocabulary.from_hf(tokenizer, eos_token_ids=np.array([128008])).eos_token_ids == (128008,)


@pytest.mark.parametrize("eos", [128257, -1, [128001, 10**6]])
def test_eos_out_of_range_is_rejected(eos):
    with pytest.raises(VocabularyError, match="eos token id"):
        Vocabulary.from_hf(zoo.llama3_hf(), eos_token_ids=eos)


def test_eos_is_required():
    with pytest.raises(VocabularyError, match="at least one eos"):
        Vocabulary.from_hf(zoo.llama3_hf(), eos_token_ids=[])
    with pytest.raises(VocabularyError, match="no eos token"):
        Vocabulary.from_tokenizers(tiny_tokenizers_tokenizer())


def tiny_tokenizers_tokenizer(decoder=None):
    """A tokenizers.Tokenizer over a few words, without any eos-like token."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    tokenizer = Tokenizer(models.BPE({"a": 0, "b": 1, "Ġ": 2, "ab": 3}, [("a", "b")]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoder if decoder is not None else decoders.ByteLevel()
    return tokenizer


# ----------------------------------------------------------- vocab_size


def test_vocab_size_larger_pads():
    base = vocabulary("qwen-hf")
    padded = Vocabulary.from_hf(zoo.qwen_hf(), vocab_size=151936)  # Qwen2.5's logits width
    assert padded.size == 151936 and padded.num_tokens == base.num_tokens == 151669
    assert padded.token_bytes == base.token_bytes
    assert padded.token_to_bytes(151935) == b""
    assert padded.grammar_token_ids().max() < padded.num_tokens
    assert padded.special_token_ids == base.special_token_ids
    assert padded.fingerprint != base.fingerprint


def test_vocab_size_smaller_may_drop_only_specials():
    tokenizer = zoo.llama3_hf()
    trimmed = Vocabulary.from_hf(tokenizer, vocab_size=128256)  # drops <|image|> (128256)
    assert trimmed.size == trimmed.num_tokens == 128256
    assert max(trimmed.special_token_ids) == 128255
    with pytest.raises(VocabularyError, match="regular tokens") as error:
        Vocabulary.from_hf(tokenizer, vocab_size=127999, eos_token_ids=[0])
    assert "127999" in str(error.value)
    # Dropping the eos token itself leaves the default eos out of range.
    with pytest.raises(VocabularyError, match="eos token id 128001"):
        Vocabulary.from_hf(tokenizer, vocab_size=128000)
    with pytest.raises(VocabularyError, match="positive"):
        Vocabulary.from_hf(tokenizer, vocab_size=0)


@pytest.mark.slow
def test_smollm2_gguf_tokenizer():
    tokenizer = zoo.smollm2_hf()
    assert len(tokenizer) == 49157
    vocab = Vocabulary.from_hf(
        tokenizer, vocab_size=zoo.SMOLLM2_MODEL_VOCAB_SIZE, eos_token_ids=[zoo.SMOLLM2_IM_END_ID]
    )
    assert vocab.kind == "byte_level" and not vocab.add_prefix_space
    assert vocab.size == vocab.num_tokens == 49152
    assert vocab.eos_token_ids == (2,)
    assert vocab.special_token_ids == set(range(17))
    # SmolLM2's BPE alphabet really lacks 21 byte values (the tokenizer maps them to its
    # unknown token, <|endoftext|>), so a grammar can never make the model spell them.
    single_bytes = {data[0] for data in vocab.token_bytes if len(data) == 1}
    assert set(range(256)) - single_bytes == {
        0x04, 0x06, 0x13, 0x14, 0x16, 0x1D, 0xC0, 0xC1, 0xF1, 0xF2, *range(0xF5, 0x100)
    }
    assert_round_trips(vocab, _hf_encode_all, _hf_decode, tokenizer, varied_texts())
    with pytest.raises(VocabularyError, match="regular tokens"):
        Vocabulary.from_hf(tokenizer, vocab_size=49151, eos_token_ids=[2])


# ------------------------------------------------------- ids and errors


def test_token_to_bytes_range():
    vocab = vocabulary("gpt2-hf")
    for bad in (-1, vocab.size, 10**9):
        with pytest.raises(VocabularyError, match=rf"token id {bad}\b"):
            vocab.token_to_bytes(bad)
    with pytest.raises(VocabularyError, match="token id 50257"):
        vocab.decode_bytes([0, 50257])
    assert vocab.decode_bytes([gpt2_id("Hello"), 50256, gpt2_id("Ġworld")]) == b"Hello world"


def test_unknown_tokenizers_are_rejected():
    class NotATokenizer:
        pass

    for build in (Vocabulary.from_hf, Vocabulary.from_any, Vocabulary.from_mistral,
                  Vocabulary.from_tiktoken, Vocabulary.from_sentencepiece, Vocabulary.from_tokenizers):
        with pytest.raises(VocabularyError, match="NotATokenizer"):
            build(NotATokenizer())
    with pytest.raises(VocabularyError, match="does not exist"):
        Vocabulary.from_sentencepiece("/nonexistent/tokenizer.model")


@pytest.mark.parametrize("decoder_name", ["WordPiece", "CTC", "BPEDecoder"])
def test_unsupported_decoders_are_named(decoder_name):
    from tokenizers import decoders

    tokenizer = tiny_tokenizers_tokenizer(decoder=getattr(decoders, decoder_name)())
    with pytest.raises(VocabularyError, match=decoder_name):
        Vocabulary.from_tokenizers(tokenizer, eos_token_ids=0)


def test_wordpiece_model_is_rejected():
    from tokenizers import Tokenizer, models

    tokenizer = Tokenizer(models.WordPiece({"[UNK]": 0, "a": 1, "##b": 2}, unk_token="[UNK]"))
    with pytest.raises(VocabularyError, match="WordPiece"):
        Vocabulary.from_tokenizers(tokenizer, eos_token_ids=0)


def test_declared_special_tokens_that_are_ordinary_pieces_stay_text():
    from transformers import GPT2TokenizerFast

    tokenizer = GPT2TokenizerFast.from_pretrained(str(zoo.gpt2_files_dir()))  # a private copy
    tokenizer.pad_token = "!"  # a common shortcut; "!" is still produced by the model as text
    tokenizer.add_special_tokens({"additional_special_tokens": ["<tool>"]})
    vocab = Vocabulary.from_hf(tokenizer)
    assert tokenizer.pad_token_id == 0 and vocab.token_bytes[0] == b"!"
    assert 0 not in vocab.special_token_ids
    tool_id = tokenizer.convert_tokens_to_ids("<tool>")
    assert tool_id == 50257 and tool_id in vocab.special_token_ids and vocab.num_tokens == 50258


def test_unigram_with_metaspace_decoder():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    pieces = [("<unk>", 0.0), ("▁", -3.0), ("▁a", -1.0), ("a", -2.0), ("b", -2.0), ("▁ab", -1.5), ("</s>", 0.0)]
    tokenizer = Tokenizer(models.Unigram(pieces, unk_id=0, byte_fallback=False))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    tokenizer.add_special_tokens(["</s>"])
    vocab = Vocabulary.from_tokenizers(tokenizer)
    assert vocab.kind == "sentencepiece" and vocab.add_prefix_space
    assert vocab.special_token_ids == {0, 6} and vocab.eos_token_ids == (6,)
    assert vocab.token_bytes[1:6] == (b" ", b" a", b"a", b"b", b" ab")
    texts = ["a b ab", "ab", " a", "ba  a"]
    assert_round_trips(vocab, _tokenizers_encode_all, _tokenizers_decode, tokenizer, texts)


def test_tiktoken_gaps_are_special():
    import tiktoken

    ranks = {bytes([value]): value for value in range(256)}
    ranks[b"ab"] = 256
    encoding = tiktoken.Encoding(
        name="gapped", pat_str=zoo.GPT2_SPLIT_PATTERN, mergeable_ranks=ranks,
        special_tokens={"<|endoftext|>": 300, "<|fim_prefix|>": 302},
    )
    vocab = Vocabulary.from_tiktoken(encoding)
    assert vocab.num_tokens == 303
    assert vocab.special_token_ids == set(range(257, 303))
    assert vocab.eos_token_ids == (300,)
    assert vocab.token_bytes[256] == b"ab" and vocab.token_bytes[301] == b""
    assert vocab.decode_bytes(encoding.encode_ordinary("abc")) == b"abc"


# ---------------------------------------------------- direct construction


def test_from_token_bytes_and_validation():
    vocab = Vocabulary.from_token_bytes([b"a", b"b", b"<eos>", b"ab"], eos_token_ids=2, special_token_ids=[2])
    assert vocab.token_bytes == (b"a", b"b", b"", b"ab")
    assert vocab.grammar_token_ids().tolist() == [0, 1, 3]
    assert vocab.kind == "raw" and vocab.size == 4
    assert "num_tokens=4" in repr(vocab) and len(repr(vocab)) < 200

    with pytest.raises(VocabularyError, match="smaller than"):
        Vocabulary(token_bytes=(b"a", b"b"), size=1, special_token_ids=frozenset(), eos_token_ids=(0,), kind="raw")
    with pytest.raises(VocabularyError, match="must have empty bytes"):
        Vocabulary(token_bytes=(b"a", b"b"), size=2, special_token_ids=frozenset({1}), eos_token_ids=(1,), kind="raw")
    with pytest.raises(VocabularyError, match="outside"):
        Vocabulary(token_bytes=(b"a",), size=4, special_token_ids=frozenset({3}), eos_token_ids=(3,), kind="raw")
    with pytest.raises(VocabularyError, match=r"token_bytes\[1\] is str"):
        Vocabulary(token_bytes=(b"a", "b"), size=2, special_token_ids=frozenset(), eos_token_ids=(0,), kind="raw")
    with pytest.raises(VocabularyError, match=r"token_bytes\[0\] is str"):
        Vocabulary.from_token_bytes(["a"], eos_token_ids=0)


# Routes to the same underlying vocabulary; every other pair of cases must differ.
SAME_VOCABULARY = (
    {"gpt2-hf", "gpt2-hf-fast"},
    {"mistral-v1-sentencepiece", "mistral-v1-common", "llama2-style-hf", "llama-metaspace-hf", "sentencepiece-hf-slow"},
)


def test_fingerprint_is_stable_and_discriminating():
    gpt2 = vocabulary("gpt2-hf")
    assert len(gpt2.fingerprint) == 64 and int(gpt2.fingerprint, 16) >= 0
    assert Vocabulary.from_hf(zoo.gpt2_hf()).fingerprint == gpt2.fingerprint

    available = [name for name in CASES if CASES[name].load() is not None]
    groups = [group & set(available) for group in SAME_VOCABULARY]
    groups += [{name} for name in available if not any(name in group for group in SAME_VOCABULARY)]
    group_prints = [{vocabulary(name).fingerprint for name in group} for group in groups if group]
    assert all(len(prints) == 1 for prints in group_prints)
    assert len(set().union(*group_prints)) == len(group_prints)

    assert Vocabulary.from_hf(zoo.gpt2_hf(), eos_token_ids=0).fingerprint != gpt2.fingerprint
    assert Vocabulary.from_hf(zoo.gpt2_hf(), vocab_size=50304).fingerprint != gpt2.fingerprint
    # The same bytes split differently must not collide.
    one = Vocabulary.from_token_bytes([b"ab", b"c", b""], eos_token_ids=2, special_token_ids=[2])
    two = Vocabulary.from_token_bytes([b"a", b"bc", b""], eos_token_ids=2, special_token_ids=[2])
    assert one.fingerprint != two.fingerprint


class _FakeModel:
    """The parts of a transformers model that Vocabulary.from_hf(model=) reads."""

    def __init__(self, width, generation_eos=None, config_eos=None):
        from types import SimpleNamespace

        self.generation_config = SimpleNamespace(eos_token_id=generation_eos)
        self.config = SimpleNamespace(eos_token_id=config_eos, vocab_size=width)
        self._head = SimpleNamespace(weight=np.zeros((width, 1)))

    def get_output_embeddings(self):
        return self._head


@pytest.mark.slow
def test_smollm2_eos_is_the_end_of_a_chat_turn_not_its_start_marker():
    """SmolLM2's GGUF tokenizer names <|im_start|> (id 1) as eos; its chat template closes a turn
    with <|im_end|> (id 2), which its model's generation config also names (issue 40, item 9)."""
    tokenizer = zoo.smollm2_hf()
    model = _FakeModel(zoo.SMOLLM2_MODEL_VOCAB_SIZE, generation_eos=zoo.SMOLLM2_IM_END_ID, config_eos=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        plain = Vocabulary.from_hf(tokenizer)
        assert plain.eos_token_ids == (zoo.SMOLLM2_IM_END_ID,) and plain.size == 49157
        for_model = Vocabulary.from_hf(tokenizer, model=model)
        assert for_model.eos_token_ids == (2,) and for_model.size == 49152
        # an explicit choice is the caller's: no warning either
        assert Vocabulary.from_hf(tokenizer, vocab_size=49152, eos_token_ids=[1]).eos_token_ids == (1,)
        # a model without an eos anywhere: the chat template's end of turn
        assert Vocabulary.from_hf(tokenizer, model=_FakeModel(49152)).eos_token_ids == (2,)
    # a model without a generation config eos: its config's; an explicit eos_token_ids still wins
    assert Vocabulary.from_hf(tokenizer, model=_FakeModel(49152, config_eos=[2, 0])).eos_token_ids == (2, 0)
    assert Vocabulary.from_hf(tokenizer, model=model, eos_token_ids=0).eos_token_ids == (0,)


@pytest.mark.slow
def test_package_quick_start_builds_the_vocabulary_the_model_ends_with():
    """The package docstring's quick start, run on SmolLM2's tokenizer: the model's width and EOS."""
    import gramalign

    line = next(line.strip() for line in gramalign.__doc__.splitlines() if line.strip().startswith("vocab = "))
    namespace = {"ga": gramalign, "tokenizer": zoo.smollm2_hf(),
                 "model": _FakeModel(zoo.SMOLLM2_MODEL_VOCAB_SIZE, generation_eos=zoo.SMOLLM2_IM_END_ID)}
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        exec(line, namespace)
    assert namespace["vocab"].eos_token_ids == (zoo.SMOLLM2_IM_END_ID,)
    assert namespace["vocab"].size == zoo.SMOLLM2_MODEL_VOCAB_SIZE


class _ChatTokenizer:
    """A slow byte-level tokenizer whose eos is "<|start|>" and whose chat template is given."""

    encoder = {"a": 0, "b": 1}
    byte_decoder = {"a": ord("a"), "b": ord("b")}
    added_tokens_decoder = {2: "<|start|>", 3: "<|end|>", 4: "<|end|>x"}
    all_special_ids = [2, 3, 4]
    eos_token_id = 2

    def __init__(self, template):
        self.chat_template = template

    def apply_chat_template(self, messages, tokenize):
        return self.chat_template(messages)

    def convert_ids_to_tokens(self, ids):
        return [["a", "b", "<|start|>", "<|end|>", "<|end|>x"][i] for i in ids]

    def encode(self, text, add_special_tokens=False):
        return [self.encoder[char] for char in text]


def _broken_template(messages):
    raise ValueError("this template needs a system message")


@pytest.mark.parametrize("template, eos", [
    (lambda messages: "".join(f"<|start|>{m['content']} <|end|>x\n" for m in messages), 4),  # the longest
    (lambda messages: "".join(f"<|start|>{m['content']}<|end|>" for m in messages), 3),
])
def test_a_start_marker_eos_gives_way_to_the_chat_templates_end_of_turn(template, eos):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        assert Vocabulary.from_hf(_ChatTokenizer(template)).eos_token_ids == (eos,)


@pytest.mark.parametrize("template", [
    lambda messages: "".join(f"<|start|>{m['content']}" for m in messages),  # no end token: the next start
    lambda messages: "|".join(m["content"] for m in messages) + " done<|end|>",  # text, not a token, ends it
    _broken_template,
    None,
])
def test_a_start_marker_eos_without_a_turn_end_in_the_template_warns(template):
    with pytest.warns(UserWarning, match="start marker"):
        assert Vocabulary.from_hf(_ChatTokenizer(template)).eos_token_ids == (2,)


def test_end_of_text_eos_that_is_also_bos_does_not_warn():
    """GPT-2 uses <|endoftext|> as both bos and eos: an end marker, not a start marker."""
    tokenizer = zoo.gpt2_hf_fast()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        vocab = Vocabulary.from_hf(tokenizer)
    assert vocab.eos_token_ids == (50256,)
    padded = Vocabulary.from_hf(tokenizer, model=_FakeModel(50304, generation_eos=50256))
    assert padded.size == 50304 and padded.num_tokens == 50257


class _StartMarkerTokenizer:
    """A slow byte-level tokenizer, the least from_hf reads, whose eos is named "<s>"."""

    encoder = {"a": 0, "b": 1}
    byte_decoder = {"a": ord("a"), "b": ord("b")}
    added_tokens_decoder = {2: "<s>"}
    all_special_ids = [2]
    eos_token_id = 2

    def convert_ids_to_tokens(self, ids):
        return [["a", "b", "<s>"][i] for i in ids]

    def encode(self, text, add_special_tokens=False):
        return [self.encoder[char] for char in text]


def test_start_marker_warning_points_at_the_caller_of_from_hf():
    with pytest.warns(UserWarning, match="start marker") as record:
        vocab = Vocabulary.from_hf(_StartMarkerTokenizer())
    assert vocab.token_bytes == (b"a", b"b", b"") and vocab.eos_token_ids == (2,)
    assert [entry.filename for entry in record] == [__file__]



def _write_gguf(path, metadata: dict, tensors: dict) -> None:
    """A GGUF v3 header (the part Vocabulary.from_gguf reads): strings, ints, bools and their lists."""
    import struct

    def string(text):
        data = text.encode("utf-8")
        return struct.pack("<Q", len(data)) + data

    def value(item):
        if isinstance(item, bool):
            return struct.pack("<I?", 7, item)
        if isinstance(item, int):
            return struct.pack("<II", 4, item)
        if isinstance(item, str):
            return struct.pack("<I", 8) + string(item)
        kind = 8 if isinstance(item[0], str) else 5
        body = b"".join(string(x) if kind == 8 else struct.pack("<i", x) for x in item)
        return struct.pack("<IIQ", 9, kind, len(item)) + body

    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata))
    out += b"".join(string(key) + value(item) for key, item in metadata.items())
    for name, shape in tensors.items():
        out += string(name) + struct.pack(f"<I{len(shape)}QIQ", len(shape), *shape, 0, 0)
    path.write_bytes(out + b"\0" * 64)  # where the weights would start


def test_gguf_vocabularies_read_only_the_header(tmp_path):
    """Token types: text in GPT-2's byte alphabet, control tokens special, user-defined ones as
    written; width from the output tensor; EOS the end of text and of turn (issue 40, item 2)."""
    tokens = ["<|endoftext|>", "a", "Ġb", "Ċ", "<think>", "<|eot|>", "Ã©"]
    path = tmp_path / "tiny.gguf"
    metadata = {"general.architecture": "llama", "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.tokens": tokens,
                "tokenizer.ggml.token_type": [3, 1, 1, 1, 4, 3, 1], "tokenizer.ggml.eos_token_id": 0,
                "tokenizer.ggml.eot_token_id": 5, "tokenizer.ggml.add_space_prefix": False}
    _write_gguf(path, metadata, {"token_embd.weight": (8, 7), "output.weight": (8, 9)})
    vocab = Vocabulary.from_gguf(path)
    assert vocab.token_bytes == (b"", b"a", b" b", b"\n", b"<think>", b"", "é".encode())
    assert vocab.size == 9 and vocab.eos_token_ids == (0, 5)
    assert Vocabulary.from_gguf(str(path), vocab_size=7, eos_token_ids=5).eos_token_ids == (5,)
    _write_gguf(path, {**metadata, "llama.vocab_size": 7}, {})  # no tensors: the declared size
    assert Vocabulary.from_gguf(path).size == 7
    _write_gguf(path, {**metadata, "tokenizer.ggml.model": "llama"}, {})
    with pytest.raises(VocabularyError, match="'llama' tokenizer.*from_hf"):
        Vocabulary.from_gguf(path)
    path.write_bytes(b"GGUF" + bytes(10))
    with pytest.raises(VocabularyError, match="not a readable GGUF file"):
        Vocabulary.from_gguf(path)
    path.write_bytes(b'{"model": {}}')
    with pytest.raises(VocabularyError, match="not a GGUF file"):
        Vocabulary.from_gguf(path)


@pytest.mark.slow
def test_smollm2_gguf_vocabulary_is_the_models():
    """Read from the header, SmolLM2's vocabulary is the one vocabulary_for_model builds from the
    tokenizer transformers converts and the model's width and generation config."""
    from gramalign.integrations.smollm2 import GGUF_FILE, smollm2_directory

    start = time.perf_counter()
    vocab = Vocabulary.from_gguf(smollm2_directory() / GGUF_FILE)
    assert time.perf_counter() - start < 5
    model = _FakeModel(zoo.SMOLLM2_MODEL_VOCAB_SIZE, generation_eos=zoo.SMOLLM2_IM_END_ID)
    assert vocab.fingerprint == Vocabulary.from_hf(zoo.smollm2_hf(), model=model).fingerprint
