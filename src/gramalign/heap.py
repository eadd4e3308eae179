"""Freed memory handed back to the operating system after a large or a failed compile.

glibc's allocator serves arrays below its mmap threshold (adaptive, up to 32 MiB) from the
heap and keeps what they free for later use. A server that compiles one large grammar after
another (lexer and LALR tables of tens of MB, and the scratch arrays that build them) so
holds memory it no longer uses: ~285 MiB after the 413-schema MaskBench sample, a fifth of
that worker's resident set. ``malloc_trim`` returns it (under a millisecond); with another C
library this is a no-op.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys

TRIM_AFTER_BYTES = 16 << 20
"""A compile that builds (or lets the compile cache drop) at least this much asks for it, as
does every compile that fails."""


def _malloc_trim():
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return None


_trim = _malloc_trim()


def release_freed_memory() -> bool:
    """Ask the C allocator to return freed heap to the operating system; False where it cannot
    be asked (not glibc)."""
    if _trim is None:
        return False
    _trim(0)
    return True


@contextlib.contextmanager
def released_on_failure():
    """Hand the heap back when the body raises: a compile refused for a limit has often built
    large automata first."""
    try:
        yield
    except BaseException:
        release_freed_memory()
        raise
