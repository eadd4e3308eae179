"""`vllm serve` with gramalign's logits processor, asked through the OpenAI client on 127.0.0.1.

The constraint travels in ``vllm_xargs`` as JSON text (its values are strings and numbers only).
Concurrent requests (chat and plain completions, JSON Schema, regex and Lark, one unconstrained)
must all come back valid; one with an invalid grammar gets HTTP 400 with gramalign's message while
the others go on.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import openai
import pytest
from engine_cases import CASES

STARTUP_SECONDS = 420


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server(model_dir, tmp_path_factory):
    port = _free_port()
    log_path = tmp_path_factory.mktemp("server") / "vllm-serve.log"
    command = [sys.executable, str(Path(__file__).with_name("serve.py")), "serve", model_dir, "--host", "127.0.0.1",
               "--port", str(port), "--served-model-name", "smollm2", "--dtype", "bfloat16",
               "--max-model-len", "1024", "--max-num-seqs", "8", "--enforce-eager", "--disable-log-stats",
               # Listed as the users would; the entry point loads it too, and the second copy
               # stands aside (GramalignLogitsProcessor._passive).
               "--logits-processors", "gramalign.integrations.vllm:GramalignLogitsProcessor"]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", timeout=300, max_retries=0)
    deadline = time.monotonic() + STARTUP_SECONDS
    try:
        while True:
            if process.poll() is not None:
                pytest.fail(f"vllm serve exited with {process.returncode}:\n{log_path.read_text()[-4000:]}")
            try:
                client.models.list()
                break
            except openai.APIConnectionError:
                if time.monotonic() > deadline:
                    pytest.fail(f"vllm serve not up after {STARTUP_SECONDS}s:\n{log_path.read_text()[-4000:]}")
                time.sleep(2)
        yield client
    finally:
        _stop(process)


def _stop(process: subprocess.Popen) -> None:
    """The server and its engine processes (its own session's group), nothing else."""
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 30)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _xargs(constraint) -> dict:
    return {"vllm_xargs": {"gramalign": json.dumps(constraint)}}


def _chat(client, prompt, constraint, **options):
    extra = _xargs(constraint) if constraint is not None else {}
    response = client.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": prompt}],
                                              max_tokens=120, extra_body=extra, **options)
    return response.choices[0]


def _completion(client, prompt, constraint, **options):
    response = client.completions.create(model="smollm2", prompt=prompt, max_tokens=120,
                                         extra_body=_xargs(constraint), **options)
    return response.choices[0]


def test_openai_clients_get_valid_outputs_concurrently_and_a_bad_grammar_gets_400(server):
    jobs = {}
    with ThreadPoolExecutor(max_workers=8) as pool:
        for name, (prompt, constraint, _) in CASES.items():
            jobs[("chat", name)] = pool.submit(_chat, server, prompt, constraint, temperature=0)
        jobs[("sampled", "person")] = pool.submit(_chat, server, CASES["person"][0], CASES["person"][1],
                                                  temperature=1.0, seed=3)
        jobs[("completion", "phone")] = pool.submit(_completion, server, "My phone number is ",
                                                    CASES["phone"][1], temperature=0)
        jobs[("free", None)] = pool.submit(_chat, server, "Say hi.", None, temperature=0)
        jobs[("bad", None)] = pool.submit(_chat, server, "Hello", {"regex": "(unclosed"}, temperature=0)
        jobs[("both", None)] = pool.submit(_chat, server, "Hello", {"regex": "[a-z]+"}, temperature=0,
                                           response_format={"type": "json_object"})
        for (kind, name), job in jobs.items():
            if kind == "bad":
                with pytest.raises(openai.BadRequestError) as info:
                    job.result()
                assert info.value.status_code == 400
                assert "gramalign could not compile the request's regex: RegexError" in str(info.value)
                continue
            if kind == "both":
                with pytest.raises(openai.BadRequestError, match="cannot ask for both gramalign's constraint"):
                    job.result()
                continue
            choice = job.result()
            text = choice.message.content if kind in ("chat", "sampled", "free") else choice.text
            if kind == "free":
                assert text.strip()
                continue
            assert choice.finish_reason == "stop", f"{kind} {name}: {choice.finish_reason} after {text!r}"
            CASES[name][2](text)
