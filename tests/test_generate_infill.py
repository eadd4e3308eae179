"""ga.generate_infill with a real transformers loop (the tiny random Llama of conftest.py and
GPT-2's tokenizer): the middle it returns puts prefix and suffix into one sentence, checked
with ``re``; the prompt follows the template; a tokenizer without FIM markers needs one."""

import copy
import re

import pytest

import gramalign as ga
from gramalign.integrations.generate import fim_prompt_ids
from support.tokenizer_zoo import gpt2_hf_fast


def template(prefix, suffix):
    return f"Fill in: {prefix}[...]{suffix}\nAnswer: "


@pytest.mark.parametrize("seed", range(3))
def test_the_middle_meets_the_suffix(tiny_model, seed):
    tokenizer = gpt2_hf_fast()
    pattern = r"[0-9]{1,3}(,[0-9]{1,3}){0,3}"  # at most four numbers: the suffix leaves room for two more
    out = ga.generate_infill(tiny_model, tokenizer, "1,22", ",333,4", grammar=ga.Grammar.from_regex(pattern),
                             template=template, max_new_tokens=16, seed=seed)
    assert out.finished, out
    assert re.fullmatch(pattern, "1,22" + out.text + ",333,4"), out.text
    assert out.constraint_checks >= 1 and out.seconds > 0


def test_prompts_follow_the_template_or_the_tokenizers_markers():
    tokenizer = gpt2_hf_fast()
    assert fim_prompt_ids(tokenizer, "ab", "cd", template) == tokenizer("Fill in: ab[...]cd\nAnswer: ").input_ids
    assert fim_prompt_ids(tokenizer, "ab", "cd", lambda p, s: [1, 2, 3]) == [1, 2, 3]
    with pytest.raises(ValueError, match="pass template="):
        fim_prompt_ids(tokenizer, "ab", "cd")
    tokenizer = copy.deepcopy(tokenizer)  # the zoo's tokenizer is shared: mark a copy
    tokenizer.add_special_tokens({"additional_special_tokens": ["<fim_prefix>", "<fim_suffix>", "<fim_middle>"]})
    ids = fim_prompt_ids(tokenizer, "ab", "cd")
    vocab = tokenizer.get_vocab()
    assert ids == [vocab["<fim_prefix>"], *tokenizer("ab").input_ids, vocab["<fim_suffix>"],
                   *tokenizer("cd").input_ids, vocab["<fim_middle>"]]
