"""HFLanguageModel and gramalign.generate with the demo model (SmolLM2-135M), a few tokens each."""

import re

import numpy as np
import pytest

import gramalign as ga



@pytest.fixture(scope="module")
def demo():
    from gramalign.integrations.smollm2 import load_smollm2

    return load_smollm2(show_progress=False)


def test_kv_cache_reuse_matches_full_forward(demo):
    model, tokenizer = demo
    lm = ga.HFLanguageModel(model)
    ids = tokenizer("The capital of France is").input_ids
    lm.next_token_logprobs([ids, ids])
    steps = [[ids + [12], ids + [13]],
             [ids + [13, 5], ids + [12, 7], ids + [13, 9]]]  # rows reordered and duplicated, as SMC does
    for rows in steps:
        cached = lm.next_token_logprobs(rows)
        fresh = ga.HFLanguageModel(model).next_token_logprobs(rows)
        np.testing.assert_allclose(cached, fresh, atol=2e-4)
        np.testing.assert_allclose(np.exp(cached).sum(axis=1), 1.0, atol=1e-9)
    assert lm.reused_calls == 2


@pytest.mark.parametrize("sampler", ["masked", "asap", "awrs", "smc"])
def test_generate_every_sampler_matches_grammar(demo, sampler):
    model, tokenizer = demo
    pattern = r"(yes|no), [0-9]{1,2}"
    vocab = ga.vocabulary_for_model(tokenizer, model)
    compiled = ga.compile(ga.Grammar.from_regex(pattern), vocab)
    out = ga.generate(model, tokenizer, "Is 7 prime? Answer yes or no, then a number.", grammar=compiled,
                      sampler=sampler, max_new_tokens=12, num_particles=3, seed=0)
    assert out.finished and re.fullmatch(pattern, out.text), out
    assert out.text == vocab.decode_bytes(out.token_ids).decode()
    assert np.isfinite(out.logprob) and out.logprob < 0
    if sampler in ("awrs", "smc"):
        assert out.log_weight is not None and out.constraint_checks > 0
    if sampler == "smc":
        assert len(out.particles) == 3 and out.log_normaliser <= 1e-9
        assert all(re.fullmatch(pattern, vocab.decode_bytes(p.token_ids).decode()) for p in out.particles)


def test_generate_asap_keeps_learning_across_calls(demo):
    model, tokenizer = demo
    grammar = ga.Grammar.from_regex(r"(yes|no)")
    first = ga.generate(model, tokenizer, "Is 7 prime?", grammar=grammar, sampler="asap", seed=0)
    bound = first.asap.grammatical_mass_bound()
    second = ga.generate(model, tokenizer, "Is 7 prime?", grammar=grammar, sampler="asap", asap=first.asap, seed=1)
    assert second.asap is first.asap and first.asap.num_nodes >= 2
    assert re.fullmatch("yes|no", second.text) and first.asap.grammatical_mass_bound() <= bound
    with pytest.raises(ValueError, match="another prompt"):
        ga.generate(model, tokenizer, "Is 9 prime?", grammar=grammar, sampler="asap", asap=first.asap)


def test_generate_rejects_unknown_sampler(demo):
    model, tokenizer = demo
    with pytest.raises(ValueError, match="sampler must be one of"):
        ga.generate(model, tokenizer, "hi", grammar=ga.Grammar.from_regex("a"), sampler="beam")


def test_positions_along_a_sequence_match_full_forwards(demo):
    model, tokenizer = demo
    lm = ga.HFLanguageModel(model)
    ids = tokenizer("The capital of France is").input_ids
    first = lm.next_token_logprobs_along(ids + [12, 13, 14], 3)
    diverged = lm.next_token_logprobs_along(ids + [12, 40, 41, 42], 4)  # cache cropped after ids + [12]
    fresh = ga.HFLanguageModel(model)
    for rows, sequence in ((first, ids + [12, 13, 14]), (diverged, ids + [12, 40, 41, 42])):
        count = len(rows)
        expected = fresh.next_token_logprobs([sequence[:len(sequence) - count + 1 + i] for i in range(count)])
        np.testing.assert_allclose(rows, expected, atol=2e-4)
    assert lm.reused_calls == 1


def test_greedy_speculative_decoding_equals_greedy_masked_decoding(demo):
    """A truncated copy of the model drafts; greedy output must not change."""
    import copy

    from gramalign.samplers import SamplingOptions, masked_sample, speculative_sample

    model, tokenizer = demo
    draft_model = copy.deepcopy(model)
    draft_model.model.layers = draft_model.model.layers[:6]
    draft_model.config.num_hidden_layers = 6
    compiled = ga.compile(ga.Grammar.from_json_schema({"type": "object", "required": ["city", "population"],
                                                       "properties": {"city": {"type": "string", "maxLength": 12},
                                                                      "population": {"type": "integer"}}}),
                          ga.vocabulary_for_model(tokenizer, model))
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "Describe Paris as JSON."}],
                                           add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"]
    greedy = SamplingOptions(temperature=0)
    plain = masked_sample(ga.HFLanguageModel(model), compiled, prompt_ids=prompt, max_new_tokens=30, options=greedy)[0]
    result = speculative_sample(ga.HFLanguageModel(model), ga.HFLanguageModel(draft_model), compiled,
                                prompt_ids=prompt, num_draft_tokens=4, max_new_tokens=30, options=greedy)
    assert result.sample.token_ids == plain.token_ids and result.sample.finished == plain.finished
    assert result.target_calls < len(plain.token_ids) + 1  # fewer target passes than tokens


def test_generate_with_jump_forward_samples_only_unforced_tokens(demo):
    import jsonschema

    model, tokenizer = demo
    schema = {"type": "object", "additionalProperties": False, "required": ["city", "population", "country"],
              "properties": {"city": {"type": "string", "maxLength": 20}, "population": {"type": "integer"},
                             "country": {"type": "string", "maxLength": 20}}}
    compiled = ga.compile(ga.Grammar.from_json_schema(schema), ga.vocabulary_for_model(tokenizer, model))
    prompt = "Describe Paris as JSON with keys city, population, country."
    runs = {}
    for jump in (False, True):
        lm = ga.HFLanguageModel(model)
        calls = []
        forward = lm.model.forward
        lm.model.forward = lambda *a, **k: calls.append(1) or forward(*a, **k)
        try:
            out = ga.generate(lm, tokenizer, prompt, grammar=compiled, max_new_tokens=60, temperature=0,
                              jump_forward=jump)
        finally:
            del lm.model.forward
        assert out.finished, out
        jsonschema.validate(__import__("json").loads(out.text), schema)
        # the reported log-probability is the model's own, scored again from scratch
        ids = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                            tokenize=True, return_dict=True)["input_ids"]
        rescored = ga.HFLanguageModel(model).next_token_logprobs_along(list(ids) + list(out.token_ids),
                                                                       len(out.token_ids) + 1)
        expected = float(sum(rescored[k, t] for k, t in enumerate(out.token_ids)))
        expected += max(rescored[-1, eos] for eos in compiled.vocabulary.eos_token_ids)  # greedy took the best
        assert out.logprob == pytest.approx(expected, abs=2e-3)
        runs[jump] = (out, len(calls))
        # one forward pass per sampled token: the forced ones cost none of their own
        assert len(calls) == len(out.token_ids) + 1 - out.forced_tokens
    assert runs[False][0].forced_tokens == 0 and runs[True][0].forced_tokens >= 3  # the keys after the first
    with pytest.raises(ValueError, match="masked sampler only"):
        ga.generate(model, tokenizer, prompt, grammar=compiled, sampler="awrs", jump_forward=True)


def test_vocabulary_takes_eos_and_width_from_the_demo_model(demo):
    """The GGUF tokenizer says <|im_start|>; the model's generation config and chat template say <|im_end|>."""
    model, tokenizer = demo
    vocab = ga.vocabulary_for_model(tokenizer, model)
    assert vocab.eos_token_ids == (tokenizer.convert_tokens_to_ids("<|im_end|>"),)
    assert vocab.size == model.get_output_embeddings().weight.shape[0] == 49152
    assert ga.Vocabulary.from_hf(tokenizer, model=model).eos_token_ids == vocab.eos_token_ids
    # without the model, the chat template's end of turn (issue 40, item 9)
    assert ga.Vocabulary.from_hf(tokenizer).eos_token_ids == vocab.eos_token_ids


@pytest.mark.parametrize("sampler", ["asap", "awrs", "smc"])
@pytest.mark.parametrize("option", [{"temperature": 0.5}, {"top_k": 5}, {"top_p": 0.9}])
def test_sampling_options_are_refused_where_they_would_be_ignored(demo, sampler, option):
    model, tokenizer = demo
    with pytest.raises(ValueError, match="masked sampler only"):
        ga.generate(model, tokenizer, "Is 7 prime?", grammar=ga.Grammar.from_regex("Yes|No"), sampler=sampler,
                    **option)


def test_generate_chat_returns_a_generation_with_the_models_logprob(demo):
    from gramalign.integrations.hf import generate_chat

    model, tokenizer = demo
    pattern = r"(yes|no), [0-9]{1,2}"
    compiled = ga.compile(ga.Grammar.from_regex(pattern), ga.vocabulary_for_model(tokenizer, model))
    messages = [{"role": "user", "content": "Is 7 prime? Answer yes or no, then a number."}]
    answer = generate_chat(model, tokenizer, compiled, messages, max_new_tokens=12)
    assert isinstance(answer, ga.Generation) and answer.finished and re.fullmatch(pattern, answer.text)
    assert answer.seconds > 0 and answer.log_weight is None
    # oracle: one forward pass over prompt + answer + EOS, the unconstrained model's log-softmax
    prompt = list(tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                                return_dict=True)["input_ids"])
    written = list(answer.token_ids)
    along = ga.HFLanguageModel(model).next_token_logprobs([prompt + written[:k] for k in range(len(written) + 1)])
    text_logprob = sum(along[k, token] for k, token in enumerate(written))
    eos_logprob = answer.logprob - text_logprob  # the EOS that ended it is one of the vocabulary's
    assert any(eos_logprob == pytest.approx(along[-1, eos], abs=1e-3) for eos in compiled.vocabulary.eos_token_ids)
    with pytest.warns(DeprecationWarning, match="Generation"):
        from gramalign.integrations.hf import ChatAnswer
    assert ChatAnswer is ga.Generation
