"""The core runs without the optional dependencies; what needs one names the extra to install.

Each check runs in a fresh interpreter where the optional packages cannot be imported
(``sys.modules[name] = None`` makes ``import name`` raise ImportError, as an environment
without them does).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

BLOCKED = ("torch", "transformers", "tokenizers", "jsonschema", "interegular")


def run_without_extras(code: str) -> subprocess.CompletedProcess:
    prelude = "import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in BLOCKED)
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=300)


def test_compile_and_mask_need_no_optional_dependency():
    result = run_without_extras("""
        import numpy as np
        import gramalign as ga
        pieces = [bytes([b]) for b in range(256)] + [b"</s>"]
        vocab = ga.Vocabulary.from_token_bytes(pieces, eos_token_ids=[256])
        schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
        matcher = ga.compile(ga.Grammar.from_json_schema(schema), vocab).matcher()
        matcher.accept_string('{"n":12}')
        mask = ga.allocate_token_bitmask_numpy(1, vocab.size)
        matcher.fill_next_token_bitmask(mask)
        assert matcher.can_terminate()
        print("ok")
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_the_torch_integrations_name_the_hf_extra():
    for name in ("GrammarLogitsProcessor", "apply_token_bitmask_inplace", "HFLanguageModel"):
        result = run_without_extras(f"""
            import gramalign as ga
            try:
                ga.{name}
            except ImportError as error:
                print(error)
        """)
        assert result.returncode == 0, result.stderr
        assert "pip install 'gramalign[hf]'" in result.stdout, (name, result.stdout)
