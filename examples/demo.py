"""`make demo`: SmolLM2-135M-Instruct fills a JSON Schema, and every object it writes validates.

The schema below has what real schemas have: nested objects, enums, arrays with bounds,
numbers with bounds, integers and a string format. gramalign compiles it to a grammar
(`Grammar.from_json_schema`), masks the model's logits token by token, and the jsonschema
package (with format checking) then validates each object independently.
"""

import json
import time

import jsonschema
import torch

import gramalign as ga
from gramalign.integrations.hf import generate_chat
from gramalign.integrations.smollm2 import load_smollm2

EVENT_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 40},
        "category": {"enum": ["concert", "conference", "sports", "festival", "exhibition"]},
        "date": {"type": "string", "format": "date"},
        "venue": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "minLength": 1, "maxLength": 30},
                "country": {"type": "string", "minLength": 1, "maxLength": 30},
            },
            "required": ["city", "country"],
            "additionalProperties": False,
        },
        "ticket_price_eur": {"type": "number", "minimum": 0, "maximum": 2000},
        "attendance": {"type": "integer", "minimum": 1, "maximum": 1000000},
        "highlights": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 40},
                       "minItems": 1, "maxItems": 3},
    },
    "required": ["name", "category", "date", "venue", "ticket_price_eur", "attendance", "highlights"],
    "additionalProperties": False,
}

SYSTEM = "You describe events as JSON objects."
PROMPTS = [
    "Describe the Woodstock music festival of 1969.",
    "Describe the opening ceremony of the 2024 Summer Olympics in Paris.",
    "Invent a small tech conference in Berlin next spring and describe it.",
]


def main() -> None:
    torch.manual_seed(0)
    model, tokenizer = load_smollm2()
    vocab = ga.vocabulary_for_model(tokenizer, model)
    start = time.perf_counter()
    grammar = ga.Grammar.from_json_schema(EVENT_SCHEMA, whitespace="flexible")
    compiled = ga.compile(grammar, vocab)
    print(f"Schema compiled in {(time.perf_counter() - start) * 1000:.0f} ms "
          f"({len(grammar.rules)} grammar rules, {len(grammar.terminals)} terminals); "
          f"vocabulary of {vocab.num_tokens} tokens\n")
    validator = jsonschema.Draft202012Validator(EVENT_SCHEMA, format_checker=jsonschema.FormatChecker())
    all_valid = True
    for question in PROMPTS:
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
        answer = generate_chat(model, tokenizer, compiled, messages, max_new_tokens=250)
        text = answer.text
        if not answer.finished:
            verdict = "unfinished: the token budget ran out (every prefix is still valid)"
        else:
            errors = [error.message for error in validator.iter_errors(json.loads(text))]
            verdict = "valid" if not errors else "INVALID: " + "; ".join(errors)
            all_valid &= not errors
        print(f"== {question}")
        print("   " + text.strip().replace("\n", "\n   "))
        print(f"   jsonschema: {verdict}   ({len(answer.token_ids)} tokens in {answer.seconds:.1f} s)\n")
    print("Every finished object validates against the schema." if all_valid else "Some object is invalid!")
    if not all_valid:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
