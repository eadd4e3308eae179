"""SmolLM2-135M-Instruct writes answers that provably match regular expressions and JSON.

Run with `.venv/bin/python examples/regex_generation.py` after `make demo` has set up the
environment.

Each prompt comes with a regex; gramalign masks the model's logits so that the output is a
full match, and we check it with Python's own `re.fullmatch`. A last prompt is constrained
by the shipped RFC 8259 JSON grammar (a context-free grammar) and checked with `json.loads`.
"""

import json
import re
import time

import torch

import gramalign as ga
from gramalign.integrations.hf import generate_chat
from gramalign.integrations.smollm2 import load_smollm2

EXAMPLES = [
    ("ISO date",
     "On what date did Apollo 11 land on the Moon? Reply with the date only.",
     r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])"),
    ("email address",
     "Make up a work email address for Jane Doe, who works at example.com.",
     r"[a-z0-9._%+-]{1,32}@[a-z0-9-]{1,32}(\.[a-z]{2,6}){1,2}"),
    ("flat JSON object",
     "Describe a fictional person as JSON with their name, age and home city.",
     r'\{"name": "[A-Z][a-z]{1,15}( [A-Z][a-z]{1,15})?", "age": (1[89]|[2-9]\d), "city": "[A-Z][a-z]{1,20}( [A-Z][a-z]{1,20})?"\}'),
]


JSON_QUESTION = "Give the weather forecast for Paris for the next two days as JSON."


def generate(model, tokenizer, compiled, question: str, max_new_tokens: int):
    """(text, finished, number of tokens, seconds) of a greedy constrained answer."""
    answer = generate_chat(model, tokenizer, compiled, [{"role": "user", "content": question}],
                           max_new_tokens=max_new_tokens)
    return answer.text, answer.finished, len(answer.token_ids), answer.seconds


def main() -> None:
    torch.manual_seed(0)
    model, tokenizer = load_smollm2()
    vocab = ga.vocabulary_for_model(tokenizer, model)
    print(f"Vocabulary: {vocab.num_tokens} tokens, logits width {vocab.size}, EOS ids {list(vocab.eos_token_ids)}\n")
    all_match = True
    for title, question, pattern in EXAMPLES:
        start = time.perf_counter()
        compiled = ga.compile(ga.Grammar.from_regex(pattern), vocab)
        compile_ms = (time.perf_counter() - start) * 1000
        text, _, n_tokens, seconds = generate(model, tokenizer, compiled, question, 64)
        matches = re.fullmatch(pattern, text) is not None
        all_match &= matches
        print(f"== {title}  (regex compiled in {compile_ms:.0f} ms)")
        print(f"   prompt : {question}")
        print(f"   regex  : {pattern}")
        print(f"   output : {text}")
        print(f"   re.fullmatch: {'yes' if matches else 'NO'}   "
              f"({n_tokens} tokens in {seconds:.1f} s)\n")

    start = time.perf_counter()
    compiled = ga.compile(ga.Grammar.builtin("json"), vocab)
    compile_ms = (time.perf_counter() - start) * 1000
    text, finished, n_tokens, seconds = generate(model, tokenizer, compiled, JSON_QUESTION, 200)
    try:
        json.loads(text)
        verdict = "yes"
    except ValueError:
        verdict = "no: the token budget ran out mid-document" if not finished else "NO"
        all_match &= not finished
    print(f"== JSON, any shape (the RFC 8259 grammar, compiled in {compile_ms:.0f} ms)")
    print(f"   prompt : {JSON_QUESTION}")
    print("   output : " + text.strip().replace("\n", "\n            "))
    print(f"   json.loads: {verdict}   ({n_tokens} tokens in {seconds:.1f} s)\n")
    print("All outputs are valid." if all_match else "Some output did not match!")
    if not all_match:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
