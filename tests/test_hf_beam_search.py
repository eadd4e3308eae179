"""Beam search through GrammarLogitsProcessor with the demo model (SmolLM2-135M-Instruct, offline).

HF beam search reorders and duplicates rows between calls and keeps -inf candidates to
fill its beams; the processor must give every row the matcher of exactly its tokens. The
outputs are checked with independent oracles: ``re.fullmatch`` and the jsonschema validator.
"""

import json
import re

import pytest

import gramalign as ga

jsonschema = pytest.importorskip("jsonschema")

BEAMS = [(2, 1), (2, 2), (4, 1), (4, 4)]
QUESTION = "What is the capital of France? Answer with the city and a two-digit number."


@pytest.fixture(scope="module")
def demo():
    from gramalign.integrations.smollm2 import load_smollm2

    model, tokenizer = load_smollm2(show_progress=False)
    return model, tokenizer, ga.vocabulary_for_model(tokenizer, model)


def _beam_texts(demo, compiled, question, num_beams, num_return_sequences, max_new_tokens, do_sample=False):
    model, tokenizer, vocab = demo
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": question}], add_generation_prompt=True,
                                           return_tensors="pt", return_dict=True)
    output = model.generate(**prompt, num_beams=num_beams, num_return_sequences=num_return_sequences,
                            do_sample=do_sample, max_new_tokens=max_new_tokens,
                            logits_processor=[ga.GrammarLogitsProcessor(compiled)])
    assert output.shape[0] == num_return_sequences
    texts = []
    for row in output[:, prompt["input_ids"].shape[1]:].tolist():
        ends = [k for k, token in enumerate(row) if token in vocab.eos_token_ids]
        assert ends, f"no EOS within {max_new_tokens} tokens: {vocab.decode_bytes(row)!r}"
        texts.append(vocab.decode_bytes(row[: ends[0]]).decode("utf-8"))
    return texts


@pytest.mark.parametrize("num_beams, num_return_sequences", BEAMS)
def test_beam_search_regex(demo, num_beams, num_return_sequences):
    # The case: with matchers following beams by position, num_beams=2 raised TokenRejected on this
    # prompt (and returned 'Parisisubs 20' on another one).
    pattern = r"[A-Z][a-z]{2,8} [0-9]{2}"
    compiled = ga.compile(ga.Grammar.from_regex(pattern), demo[2])
    texts = _beam_texts(demo, compiled, QUESTION, num_beams, num_return_sequences, 20)
    for text in texts:
        assert re.fullmatch(pattern, text), text


def test_beam_sampling_regex(demo):
    """do_sample=True with beams draws the K continuations at random, from any beam."""
    import torch

    pattern = r"[A-Z][a-z]{2,8} [0-9]{2}"
    compiled = ga.compile(ga.Grammar.from_regex(pattern), demo[2])
    for seed in range(2):
        torch.manual_seed(seed)
        for text in _beam_texts(demo, compiled, QUESTION, 4, 4, 20, do_sample=True):
            assert re.fullmatch(pattern, text), text


SCHEMA = {"type": "object", "additionalProperties": False, "required": ["city", "population", "capital"],
          "properties": {"city": {"type": "string", "maxLength": 12},
                         "population": {"type": "integer", "minimum": 0, "maximum": 99999999},
                         "capital": {"type": "boolean"}}}


@pytest.mark.parametrize("num_beams, num_return_sequences", BEAMS)
def test_beam_search_json_schema(demo, num_beams, num_return_sequences):
    compiled = ga.compile(ga.Grammar.from_json_schema(SCHEMA), demo[2])  # a context-free grammar: forks copy stacks
    texts = _beam_texts(demo, compiled, "Describe Lyon as JSON with its population.",
                        num_beams, num_return_sequences, 48)
    for text in texts:
        jsonschema.validate(json.loads(text), SCHEMA)
