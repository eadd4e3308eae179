"""ASGI middleware for vLLM's OpenAI server: request grammars compiled off the event loop.

Start the server with it beside the logits processor::

    vllm serve MODEL --logits-processors gramalign.integrations.vllm:GramalignLogitsProcessor \\
        --middleware gramalign.integrations.vllm_admission.GramalignAdmission

A POST whose JSON body carries a gramalign constraint (``vllm_xargs.gramalign``) is held here
until :class:`gramalign.integrations.admission.Admission` has built its grammar in a worker
process: a malformed constraint, or one that does not compile within its budget, gets HTTP 400
with gramalign's message (the body vLLM's own errors have); one that compiles goes on to vLLM,
whose ``validate_params`` then finds it admitted and does not build it again, and whose engine
loads the grammar built here instead of building it in its step (a JSON Schema built here in
milliseconds is not saved: the engine builds the parts its matchers reach, see
:data:`gramalign.integrations.admission.ENGINE_BUILDS_SECONDS`). Other requests pass untouched,
and nothing here blocks the event loop. Without the middleware the server still works; each
new grammar is then built in ``validate_params``, on the event loop.

Settings come from the environment: ``GRAMALIGN_ADMISSION_WORKERS`` (worker processes, default
2) and ``GRAMALIGN_ADMISSION_SECONDS`` (each request's compile time budget, default
:class:`gramalign.CompileLimits`'). This module imports neither vLLM nor torch.
"""

from __future__ import annotations

import json
import logging

from .admission import Admission
from .batch_rows import EXTRA_ARGS_KEY, ConstraintError

logger = logging.getLogger(__name__)

__all__ = ["GramalignAdmission"]

_KEY = EXTRA_ARGS_KEY.encode()


class GramalignAdmission:
    """The middleware (an ASGI application wrapping vLLM's); see the module's documentation."""

    def __init__(self, app, admission: "Admission | None" = None):
        self.app = app
        self.admission = admission if admission is not None else Admission.from_environment()
        self.admission.start()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        messages, body = await _read_body(receive)
        replay = _replaying(messages, receive)
        # A constraint needs the key in the body; a JSON escape can hide it from this test, and
        # such a body is parsed too.
        if _KEY not in body and b"\\u" not in body:
            await self.app(scope, replay, send)
            return
        try:
            payload = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            await self.app(scope, replay, send)  # not JSON: vLLM answers it
            return
        extra = payload.get("vllm_xargs") if isinstance(payload, dict) else None
        if isinstance(extra, dict) and EXTRA_ARGS_KEY in extra:
            try:
                await self.admission.admit(extra)
            except ConstraintError as error:
                await _refuse(send, str(error))
                return
            except Exception:  # noqa: BLE001 - the admission is broken: vLLM's own check still runs
                logger.exception("gramalign: the admission failed; validate_params will build this grammar")
        await self.app(scope, replay, send)


async def _read_body(receive) -> "tuple[list[dict], bytes]":
    messages, parts = [], []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break  # the client went away: vLLM sees the disconnect
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return messages, b"".join(parts)


def _replaying(messages: "list[dict]", receive):
    pending = list(messages)

    async def replay():
        if pending:
            return pending.pop(0)
        return await receive()

    return replay


async def _refuse(send, message: str) -> None:
    body = json.dumps({"error": {"message": message, "type": "BadRequestError", "param": None,
                                 "code": 400}}).encode()
    await send({"type": "http.response.start", "status": 400,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
