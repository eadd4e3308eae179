"""Compare the samplers on the demo model: masked, ASAp, AWRS and SMC on one small grammar.

Run: HF_HUB_OFFLINE=1 python examples/sampling.py
"""

import gramalign as ga
from gramalign.integrations.smollm2 import load_smollm2

model, tokenizer = load_smollm2()
compiled = ga.compile(ga.Grammar.from_regex(r"(Yes|No), because [A-Za-z ,']{5,60}\."),
                      ga.vocabulary_for_model(tokenizer, model))
prompt = "Is the sun a star? Answer yes or no with a short reason."
for sampler in ["masked", "asap", "awrs", "smc"]:
    out = ga.generate(model, tokenizer, prompt, grammar=compiled, sampler=sampler, max_new_tokens=40,
                      num_particles=4, seed=0)
    extra = f" log_weight={out.log_weight:.2f} checks={out.constraint_checks}" if out.log_weight is not None else ""
    print(f"{sampler:>6}: {out.text!r} logprob={out.logprob:.2f}{extra}")
