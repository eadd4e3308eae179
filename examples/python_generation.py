"""SmolLM2-135M-Instruct writes Python functions that always parse.

The shipped Python grammar (`Grammar.builtin("python")`, with INDENT/DEDENT made by
gramalign's incremental lexer) constrains every token; Python's own parser (`ast.parse`)
checks each result. Run with `.venv/bin/python examples/python_generation.py` after
`make demo` has set up the environment.
"""

import ast
import time

import torch

import gramalign as ga
from gramalign.integrations.smollm2 import load_smollm2

SYSTEM = "You are a Python programmer. Reply with Python code only: no prose, no Markdown."
# (task, the start of the answer: written into the prompt, and the grammar constrains the rest)
TASKS = [
    ("Write a function is_even(n) that returns True when n is even.", "def is_even(n):"),
    ("Write a function largest(numbers) that returns the largest number in a list, using a loop.",
     "def largest(numbers):"),
    ("Write a class Counter with methods increment() and value().", "class Counter:"),
]


def main() -> None:
    torch.manual_seed(0)
    model, tokenizer = load_smollm2()
    vocab = ga.vocabulary_for_model(tokenizer, model)
    start = time.perf_counter()
    compiled = ga.compile(ga.Grammar.builtin("python"), vocab)
    print(f"Python grammar compiled in {(time.perf_counter() - start) * 1000:.0f} ms\n")
    ok = True
    for task, header in TASKS:
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task}]
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False) + header
        prompt = tokenizer(text, return_tensors="pt")
        start = time.perf_counter()
        output = model.generate(**prompt, max_new_tokens=100, do_sample=False,
                                logits_processor=[ga.GrammarLogitsProcessor(compiled, prefix=header)])
        seconds = time.perf_counter() - start
        new_tokens = output[0, prompt["input_ids"].shape[1]:].tolist()
        finished = bool(new_tokens) and new_tokens[-1] in vocab.eos_token_ids
        if finished:
            new_tokens = new_tokens[:-1]
        code = header + b"".join(vocab.token_to_bytes(t) for t in new_tokens).decode("utf-8")
        try:
            ast.parse(code)
            verdict = "parses with ast.parse"
        except SyntaxError as exc:
            verdict = "a valid prefix (token budget ran out)" if not finished else f"DOES NOT PARSE: {exc}"
            ok &= not finished
        print(f"# {task}\n{code}\n# -> {verdict} ({len(new_tokens)} tokens in {seconds:.1f} s)\n")
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
