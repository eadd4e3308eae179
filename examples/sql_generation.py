"""SmolLM2-135M-Instruct writes SQLite queries that always parse.

The shipped SQL grammar (`Grammar.builtin("sql")`) constrains every token, and lark's own
parser, given the same grammar, checks each result. Run with `.venv/bin/python
examples/sql_generation.py` after `make demo` has set up the environment.
"""

import time

import lark
import torch

import gramalign as ga
from gramalign.grammar.builtin import builtin_grammar_text
from gramalign.integrations.hf import generate_chat
from gramalign.integrations.smollm2 import load_smollm2

SCHEMA = ("Tables: employees(id, name, department_id, salary, hired_on), "
          "departments(id, name, city).")
QUESTIONS = [
    "Write one SQLite query: the names of employees who earn more than 50000.",
    "Write one SQLite query: the number of employees in each department, largest first.",
    "Write one SQLite query: every employee's name with the city of their department.",
]


def main() -> None:
    torch.manual_seed(0)
    model, tokenizer = load_smollm2()
    vocab = ga.vocabulary_for_model(tokenizer, model)
    start = time.perf_counter()
    compiled = ga.compile(ga.Grammar.builtin("sql"), vocab)
    print(f"SQL grammar compiled in {(time.perf_counter() - start) * 1000:.0f} ms\n")
    oracle = lark.Lark(builtin_grammar_text("sql"), parser="lalr")
    ok = True
    for question in QUESTIONS:
        messages = [{"role": "system", "content": SCHEMA}, {"role": "user", "content": question}]
        answer = generate_chat(model, tokenizer, compiled, messages, max_new_tokens=80)
        text, finished, new_tokens, seconds = answer.text, answer.finished, answer.token_ids, answer.seconds
        try:
            oracle.parse(text)
            verdict = "parses with lark"
        except lark.exceptions.LarkError:
            verdict = "a valid prefix (token budget ran out)" if not finished else "DOES NOT PARSE"
            ok &= not finished
        print(f"Q: {question}\nSQL: {text}\n   -> {verdict} ({len(new_tokens)} tokens in {seconds:.1f} s)\n")
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
