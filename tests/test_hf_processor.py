"""GrammarLogitsProcessor inside real batched `model.generate` with a tiny random model.

The model is random, so whatever it samples is arbitrary: the only thing that can make
every output match is the mask. Outputs are checked with `re.fullmatch`.
"""

import re

import pytest
import torch
from transformers import LlamaForCausalLM

import gramalign as ga
from support.tiny_model import PADDED_WIDTH
from support.tokenizer_zoo import gpt2_hf_fast

# tiny_model: the fixture of conftest.py (support/tiny_model.py)


@pytest.mark.parametrize("pattern", [
    r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])",
    r"[a-z]{1,8}@[a-z]{1,8}\.(com|org)",
    r'\{"ok": (true|false), "n": -?\d{1,4}\}',
])
def test_batched_sampling_always_matches(tiny_model, pattern):
    tokenizer = gpt2_hf_fast()
    vocab = ga.vocabulary_for_model(tokenizer, tiny_model)
    assert vocab.size == PADDED_WIDTH and vocab.eos_token_ids == (50256,)
    compiled = ga.compile(ga.Grammar.from_regex(pattern), vocab)
    input_ids = torch.tensor([[464, 3280, 318, 25]] * 4)
    processor = ga.GrammarLogitsProcessor(compiled)
    for seed in range(3):
        torch.manual_seed(seed)
        output = tiny_model.generate(input_ids, attention_mask=torch.ones_like(input_ids), do_sample=True,
                                     max_new_tokens=40, logits_processor=[processor], pad_token_id=50256)
        for row in output[:, input_ids.shape[1]:].tolist():
            assert 50256 in row, "bounded pattern must end with EOS"
            text_ids = row[: row.index(50256)]
            text = b"".join(vocab.token_to_bytes(t) for t in text_ids).decode("utf-8")
            assert re.fullmatch(pattern, text), text
            assert all(t < tokenizer.vocab_size for t in text_ids)  # never a padding id


def test_processor_one_grammar_per_row(tiny_model):
    vocab = ga.vocabulary_for_model(gpt2_hf_fast(), tiny_model)
    patterns = [r"yes|no", r"\d{2}"]
    compiled = [ga.compile(ga.Grammar.from_regex(p), vocab) for p in patterns]
    input_ids = torch.tensor([[464, 3280], [464, 3280]])
    output = tiny_model.generate(input_ids, attention_mask=torch.ones_like(input_ids), do_sample=True,
                                 max_new_tokens=6, logits_processor=[ga.GrammarLogitsProcessor(compiled)],
                                 pad_token_id=50256)
    for pattern, row in zip(patterns, output[:, 2:].tolist()):
        text = b"".join(vocab.token_to_bytes(t) for t in row[: row.index(50256)]).decode()
        assert re.fullmatch(pattern, text)
    with pytest.raises(ValueError, match="2 compiled grammars for a batch of 3"):
        ga.GrammarLogitsProcessor(compiled)(torch.zeros(3, 2, dtype=torch.long), torch.zeros(3, PADDED_WIDTH))


def test_narrow_logits_are_rejected(tiny_model):
    vocab = ga.vocabulary_for_model(gpt2_hf_fast(), tiny_model)
    processor = ga.GrammarLogitsProcessor(ga.compile(ga.Grammar.from_regex("a+"), vocab))
    with pytest.raises(ValueError, match="smaller than the vocabulary size 50304: build the vocabulary with "
                                         r"gramalign.vocabulary_for_model\(tokenizer, model\)"):
        processor(torch.zeros(1, 3, dtype=torch.long), torch.zeros(1, 50000))


LIST = r'''
start: "let" NAME "=" value ("," value)*
?value: NUMBER | NAME | NAME "(" NUMBER ")"
NUMBER: /[0-9]{1,3}/
NAME: /[a-z]{1,6}/
%ignore " "
'''


def test_batched_sampling_follows_a_context_free_grammar(tiny_model):
    """Every row is a sentence lark parses (if it ended) or a prefix of one (if cut off)."""
    import lark

    from gramalign.parsing import IncrementalParser

    vocab = ga.vocabulary_for_model(gpt2_hf_fast(), tiny_model)
    compiled = ga.compile(ga.Grammar.from_lark(LIST), vocab)
    oracle = lark.Lark(LIST, parser="lalr")
    input_ids = torch.tensor([[464, 3280, 318, 25]] * 4)
    processor = ga.GrammarLogitsProcessor(compiled)

    def favour_eos(input_ids, scores):  # after 6 tokens, end as soon as the grammar lets a row end
        if input_ids.shape[1] >= 10:
            scores[:, 50256] += 1e4
        return scores

    ended = 0
    for seed in range(3):
        torch.manual_seed(seed)
        output = tiny_model.generate(input_ids, attention_mask=torch.ones_like(input_ids), do_sample=True,
                                     max_new_tokens=30, logits_processor=[favour_eos, processor],
                                     pad_token_id=50256)
        for row in output[:, input_ids.shape[1]:].tolist():
            text_ids = row[: row.index(50256)] if 50256 in row else row
            text = b"".join(vocab.token_to_bytes(t) for t in text_ids)
            if 50256 in row:
                oracle.parse(text.decode("utf-8"))
                ended += 1
            else:
                assert IncrementalParser(compiled.store.tables).is_prefix(text), text
    assert ended >= 1


def test_prefix_written_in_the_prompt_is_part_of_the_match(tiny_model):
    """With ``prefix``, the grammar constrains what follows text the prompt already ends with."""
    tokenizer = gpt2_hf_fast()
    vocab = ga.vocabulary_for_model(tokenizer, tiny_model)
    pattern = r"id=\d{3}-[a-z]{2}"
    compiled = ga.compile(ga.Grammar.from_regex(pattern), vocab)
    prompt = torch.tensor([tokenizer.encode("Code: id=")] * 3)
    torch.manual_seed(1)
    output = tiny_model.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=True,
                                 max_new_tokens=10, pad_token_id=50256,
                                 logits_processor=[ga.GrammarLogitsProcessor(compiled, prefix="id=")])
    for row in output[:, prompt.shape[1]:].tolist():
        text = tokenizer.decode([t for t in row if t != 50256])
        assert re.fullmatch(pattern, "id=" + text), text
    with pytest.raises(ga.StringRejected):
        ga.GrammarLogitsProcessor(compiled, prefix="x")(prompt, torch.zeros(3, PADDED_WIDTH))


def test_assisted_generation_is_refused_not_silently_wrong(tiny_model):
    """Assisted generation moves the sequence length between calls: the processor must stop
    with a clear error rather than restart its matchers mid-output."""
    tokenizer = gpt2_hf_fast()
    compiled = ga.compile(ga.Grammar.from_regex(r"[a-z]{3,40}"), ga.vocabulary_for_model(tokenizer, tiny_model))
    torch.manual_seed(1)
    config = tiny_model.config
    assistant = LlamaForCausalLM(config).eval()
    prompt = tokenizer("Words:", return_tensors="pt")
    with pytest.raises(ga.GramalignError, match="assisted generation is not supported"):
        tiny_model.generate(**prompt, assistant_model=assistant, logits_processor=[ga.GrammarLogitsProcessor(compiled)],
                            max_new_tokens=30, do_sample=False)


@pytest.mark.parametrize("num_beams, num_return_sequences", [(2, 1), (3, 3), (4, 2)])
def test_beam_search_outputs_match(tiny_model, num_beams, num_return_sequences):
    """Beam search reorders and duplicates rows between calls, and fills its beams with -inf
    candidates when too few tokens are allowed: every returned sequence must still match."""
    tokenizer = gpt2_hf_fast()
    vocab = ga.vocabulary_for_model(tokenizer, tiny_model)
    patterns = [r"[A-Z][a-z]{2,8} [0-9]{2}", r'\{"ok": (true|false), "n": -?\d{1,4}\}']
    input_ids = torch.tensor([[464, 3280, 318, 25], [464, 3280, 318, 11]])
    for pattern in patterns:
        compiled = ga.compile(ga.Grammar.from_regex(pattern), vocab)
        output = tiny_model.generate(input_ids, attention_mask=torch.ones_like(input_ids), num_beams=num_beams,
                                     num_return_sequences=num_return_sequences, do_sample=False, max_new_tokens=40,
                                     logits_processor=[ga.GrammarLogitsProcessor(compiled)], pad_token_id=50256)
        assert output.shape[0] == 2 * num_return_sequences
        for row in output[:, input_ids.shape[1]:].tolist():
            assert 50256 in row, "bounded pattern must end with EOS"
            text = vocab.decode_bytes(row[: row.index(50256)]).decode("utf-8")
            assert re.fullmatch(pattern, text), text


def test_rows_that_continue_nothing_are_refused(tiny_model):
    vocab = ga.vocabulary_for_model(gpt2_hf_fast(), tiny_model)
    processor = ga.GrammarLogitsProcessor(ga.compile(ga.Grammar.from_regex("[a-z]+"), vocab))
    scores = torch.zeros(2, PADDED_WIDTH)
    processor(torch.tensor([[5, 6], [5, 7]]), scores.clone())
    a = vocab.token_bytes.index(b"a")
    processor(torch.tensor([[5, 7, a], [5, 7, a]]), scores.clone())  # both rows continue row 1: forked
    assert [m.num_accepted_tokens for m in processor.matchers] == [1, 1]
    assert processor.matchers[0] is not processor.matchers[1]
    with pytest.raises(ga.GramalignError, match="row 1's tokens do not continue any row"):
        processor(torch.tensor([[5, 7, a, a], [5, 6, a, a]]), scores.clone())
