"""Optional dependencies, imported so that a missing one names the extra that installs it.

The core (``gramalign.grammar``, ``gramalign.masking``, ``gramalign.samplers``) needs numpy,
numba and lark only; torch, transformers and tokenizers come with ``gramalign[hf]``.
"""

from __future__ import annotations

import importlib
from types import ModuleType


def require(module: str, extra: str) -> ModuleType:
    """``module`` imported, or an ImportError saying ``pip install 'gramalign[extra]'``.

    >>> require("numpy", "hf").__name__
    'numpy'
    """
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(f"{module} is not installed, and this part of gramalign needs it: "
                          f"pip install 'gramalign[{extra}]'") from error
