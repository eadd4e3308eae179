"""A first compile in a fresh environment does not fail because numba compiles kernels
(issue 36, item 1): the compile budget leaves numba's code generation out.

The oracle is numba itself: in a child process with an empty kernel cache, the numba
compile events around a compile under a 10 s budget add up to more than that budget (about a
minute on this 2-core VM; the compile's own work is well under a second), and the
compile succeeds with masks that allow exactly the JSON texts jsonschema accepts among a
handful of probes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r'''
import json, sys, time
import gramalign as ga
from gramalign.grammar import limits as L
vocab = ga.Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [b""], eos_token_ids=256,
                                       special_token_ids=[256])
budget = ga.CompileLimits(max_compile_seconds=10)
schema = {"type": "object", "properties": {"n": {"type": "integer"}, "s": {"enum": ["a", "b"]}},
          "required": ["n"], "additionalProperties": False}
jit = L._JIT.seconds
compiled = ga.compile(ga.Grammar.from_json_schema(schema, limits=budget), vocab, limits=budget)
verdicts = {}
for text in ['{"n":1}', '{"n":1,"s":"b"}', '{"s":"a"}', '{"n":"1"}', '{"n":1,"x":2}']:
    matcher = compiled.matcher()
    try:
        matcher.accept_string(text)
        verdicts[text] = matcher.can_terminate()
    except ga.StringRejected:
        verdicts[text] = False
print(json.dumps({"jit_seconds": L._JIT.seconds - jit, "verdicts": verdicts}))
'''


def test_a_first_compile_with_an_empty_kernel_cache_is_not_cut_short(tmp_path):
    import jsonschema

    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"), PYTHONPATH=str(ROOT / "src"))
    done = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["jit_seconds"] > 10, report  # numba compiled kernels for longer than the budget
    schema = {"type": "object", "properties": {"n": {"type": "integer"}, "s": {"enum": ["a", "b"]}},
              "required": ["n"], "additionalProperties": False}
    oracle = jsonschema.Draft202012Validator(schema)
    assert report["verdicts"] == {text: oracle.is_valid(json.loads(text)) for text in report["verdicts"]}
