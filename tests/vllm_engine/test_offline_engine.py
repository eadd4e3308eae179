"""gramalign inside vLLM's offline engine (``vllm.LLM``), loaded through its entry point.

Several requests with different grammars and one unconstrained run in one batch, greedy and
sampled; every constrained output must finish with EOS inside the token budget and be valid by an
independent oracle (jsonschema, re.fullmatch, lark), and its text (vLLM's detokenizer) must be the
bytes gramalign's vocabulary gives for the same ids.
"""

from __future__ import annotations

import pytest
from engine_cases import CASES

from vllm import LLM, SamplingParams
from vllm.exceptions import VLLMValidationError

import gramalign as ga


@pytest.fixture(scope="module")
def llm(model_dir):
    # No --logits-processors: the `vllm.logits_processors` entry point of the installed gramalign
    # must be enough. enforce_eager skips torch.compile (minutes on 2 cores, nothing to test here).
    engine = LLM(model=model_dir, dtype="bfloat16", max_model_len=1024, max_num_seqs=8, seed=0,
                 enforce_eager=True, disable_log_stats=True)
    yield engine
    engine.llm_engine.engine_core.shutdown()


@pytest.fixture(scope="module")
def vocabulary(model_dir):
    from transformers import AutoTokenizer

    return ga.Vocabulary.from_hf(AutoTokenizer.from_pretrained(model_dir))


def _check(name, output, vocabulary):
    completion = output.outputs[0]
    assert completion.finish_reason == "stop", f"{name}: {completion.finish_reason} after {completion.text!r}"
    ids = list(completion.token_ids)
    assert ids[-1] in vocabulary.eos_token_ids, f"{name} did not end with EOS: {ids[-5:]}"
    assert vocabulary.decode_bytes(ids[:-1]).decode("utf-8") == completion.text
    CASES[name][2](completion.text)


def test_concurrent_requests_with_different_grammars_greedy_and_sampled(llm, chat_prompt, vocabulary):
    requests = []  # (case name or None, prompt, params)
    for name, (prompt, constraint, _) in CASES.items():
        requests.append((name, prompt, SamplingParams(temperature=0, max_tokens=120,
                                                      extra_args={"gramalign": constraint})))
    for seed, name in enumerate(["person", "order", "phone", "sql"]):
        prompt, constraint, _ = CASES[name]
        requests.append((name, prompt, SamplingParams(temperature=1.0, top_p=0.95, seed=seed, max_tokens=120,
                                                      extra_args={"gramalign": constraint})))
    requests.append((None, "Tell me about the moon.", SamplingParams(temperature=0, max_tokens=24)))
    outputs = llm.generate([chat_prompt(p) for _, p, _ in requests], [p for _, _, p in requests])
    for (name, _, _), output in zip(requests, outputs):
        if name is None:
            assert output.outputs[0].text.strip()  # unconstrained: free text, left alone
        else:
            _check(name, output, vocabulary)


def test_invalid_grammar_is_refused_and_the_engine_goes_on(llm, chat_prompt, vocabulary):
    bad = SamplingParams(max_tokens=8, extra_args={"gramalign": {"json_schema": {"type": "object",
                                                                                   "maxProperties": "two"}}})
    with pytest.raises(VLLMValidationError, match="gramalign could not compile the request's json_schema: "
                                                  "SchemaCompileError"):
        llm.generate([chat_prompt("Hello")], [bad])
    with pytest.raises(VLLMValidationError, match="needs exactly one of json_schema, regex, lark, builtin"):
        llm.generate([chat_prompt("Hello")], [SamplingParams(extra_args={"gramalign": {"regex": "a", "lark": "b"}})])
    prompt, constraint, _ = CASES["date"]
    output = llm.generate([chat_prompt(prompt)], [SamplingParams(temperature=0, max_tokens=40,
                                                                 extra_args={"gramalign": constraint})])[0]
    _check("date", output, vocabulary)
