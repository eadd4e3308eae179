"""Built grammars on disk, handed from the process that built them to the engines that use them.

A server checks a request's constraint before the request reaches the engine (see
:mod:`gramalign.integrations.admission`), in a worker process, so that neither its event loop
nor the engine's step waits for a large schema. The worker saves what it built, the grammar
and its parser tables, under a name derived from the constraint and from gramalign's own code;
an engine process meeting the constraint loads them instead of building them again, which
takes a fraction of the time (the front end's analysis and the LR construction are skipped).

The folder is ``$GRAMALIGN_CACHE_DIR/built`` when that variable is set, else
``<temporary folder>/gramalign-<uid>/built``. It must belong to this user and be writable by
nobody else: pickles are only read from such a folder, since loading a pickle runs code.
Files are written atomically; the oldest go once the folder holds more than
:data:`FOLDER_BYTES`. Anything unreadable is ignored: the engine then builds the grammar itself.

Each file also names its grammar's content (:func:`gramalign.masking.cfg.disk_cache.grammar_digest`):
constraints that differ only where the grammar does not (a schema's title, say) load as the
grammar object already in the process, with its parser tables and compiled masks, instead of
unpickling, hashing and comparing an equal copy (0.4 s of the engine's step on an idle core for
a constant array of 100,000 items).
"""

from __future__ import annotations

import hashlib
import logging
import mmap
import os
import pickle
import stat
import struct
import tempfile
import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

from ..grammar.grammar import Grammar
from ..grammar.parser_tables import handed_parser_tables, remember_parser_tables
from ..masking.cfg.disk_cache import grammar_digest, remember_grammar_digest
from ..masking.gc_guard import gc_paused

if TYPE_CHECKING:
    from ..grammar.parser_tables import ParserTables
    from .batch_rows import RequestConstraint

logger = logging.getLogger(__name__)

FILE_BYTES = 1 << 30
"""A built grammar larger than this is saved without its parser tables (the engine builds
them). Large files cost little to load: their arrays are mapped, and an LR table of hundreds
of MiB (a large schema's LALR table is dense: 80,000 states x 1,429 terminals, 439 MiB, for one
Kubernetes schema of MaskBench) is read only where the parser goes."""

FOLDER_BYTES = 4 << 30
"""Total size of the folder; the least recently written files go first."""

TRIM_EVERY_BYTES = FOLDER_BYTES // 8
"""A process checks the folder's size after writing this much (and after its first save), so
the folder holds at most FOLDER_BYTES plus this much per writing process."""

_code_digest: "str | None" = None
_written = TRIM_EVERY_BYTES

# The grammars loaded in this process, by content digest, while something uses them (each
# holds its parser tables: parser_tables.remember_parser_tables).
_loaded: "weakref.WeakValueDictionary[str, Grammar]" = weakref.WeakValueDictionary()
_loaded_lock = threading.Lock()


def code_digest() -> str:
    """SHA-256 of gramalign's installed sources and data: a built grammar is reused only by
    the same code that built it (a pickle holds objects whose meaning the code defines)."""
    global _code_digest
    if _code_digest is None:
        package = Path(__file__).resolve().parents[1]
        digest = hashlib.sha256()
        for path in sorted(package.rglob("*")):
            if "__pycache__" in path.parts or not path.is_file() or path.suffix in (".nbi", ".nbc", ".pyc", ".lock"):
                continue
            digest.update(str(path.relative_to(package)).encode())
            digest.update(path.read_bytes())
        _code_digest = digest.hexdigest()
    return _code_digest


def folder() -> "Path | None":
    """The folder of built grammars, created if needed; None when it is not safe to use."""
    root = os.environ.get("GRAMALIGN_CACHE_DIR")
    path = Path(root) / "built" if root else Path(tempfile.gettempdir()) / f"gramalign-{_uid()}" / "built"
    # In a shared temporary folder, whoever owns the parent could swap the folder itself.
    checked = (path,) if root else (path.parent, path)
    try:
        for folder_path in checked:
            folder_path.mkdir(mode=0o700, exist_ok=True, parents=folder_path is checked[0])
    except OSError as error:
        logger.warning("gramalign: no folder for built grammars at %s (%s)", path, error)
        return None
    for folder_path in checked:
        if not _private(folder_path):
            logger.warning("gramalign: %s belongs to another user or is writable by others; built grammars are "
                           "not shared through it", folder_path)
            return None
    return path


def _private(path: Path) -> bool:
    if not hasattr(os, "getuid"):
        return True  # Windows: the user's own temporary folder
    try:
        info = path.lstat()
    except OSError:
        return False
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
            and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def _uid() -> str:
    return str(os.getuid()) if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")


def file_name(constraint: "RequestConstraint") -> str:
    digest = hashlib.sha256()
    digest.update(code_digest().encode())
    digest.update(repr((constraint.kind, constraint.source, constraint.options)).encode("utf-8"))
    return digest.hexdigest()[:40] + ".pickle"


def save(constraint: "RequestConstraint", grammar: Grammar, tables: "ParserTables | None") -> bool:
    """Save ``grammar`` (and its parser tables, None for a single-regex grammar) for
    ``constraint``; False when it was not saved (no safe folder, too large, not picklable)."""
    where = folder()
    if where is None:
        return False
    if tables is not None:  # (an equal grammar's tables, from the tables cache: saved as one object)
        grammar = tables.grammar
    try:
        digest = grammar_digest(grammar)
        parts = _pickled((grammar, tables), digest)
        if sum(len(part) for part in parts) > FILE_BYTES and tables is not None:
            parts = _pickled((grammar, None), digest)
        if sum(len(part) for part in parts) > FILE_BYTES:
            return False
        path = where / file_name(constraint)
        temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        with open(temporary, "wb") as file:
            for part in parts:
                file.write(part)
        temporary.replace(path)  # atomic: a reader never sees half a file
    except (OSError, pickle.PicklingError, TypeError, AttributeError) as error:
        logger.warning("gramalign: could not save the built grammar of %s (%s: %s)", constraint.kind,
                       type(error).__name__, error)
        return False
    global _written
    _written += sum(len(part) for part in parts)
    if _written >= TRIM_EVERY_BYTES:  # a scan of the folder costs a stat per file: not on every save
        _written = 0
        _trim(where)
    return True


def _pickled(value, digest: str) -> "list[bytes | memoryview]":
    """The file's parts: a header (magic, the grammar's digest, pickle length, each buffer's
    offset and length), the pickle, then the arrays' data out of band, each at a 64-byte
    boundary so that loading maps them in place of copying them (a large grammar's LR table is
    most of its size)."""
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(value, protocol=5, buffer_callback=buffers.append)
    views = [buffer.raw() for buffer in buffers]
    header_bytes = _HEADER.size + 16 * len(views)
    offset = _aligned(header_bytes + len(data))
    spans = []
    for view in views:
        spans += [offset, view.nbytes]
        offset = _aligned(offset + view.nbytes)
    header = _HEADER.pack(_MAGIC, digest.encode("ascii"), len(data), len(views)) + struct.pack(
        f"<{2 * len(views)}Q", *spans)
    parts: "list[bytes | memoryview]" = [header, data]
    end = header_bytes + len(data)
    for (start, length), view in zip(zip(spans[::2], spans[1::2]), views):
        parts += [bytes(start - end), view]
        end = start + length
    return parts


def _aligned(offset: int) -> int:
    return (offset + 63) & ~63


_MAGIC = b"gramalg2"
_HEADER = struct.Struct("<8s64sQQ")  # magic, digest (hex), pickle length, buffer count


def load(constraint: "RequestConstraint") -> "tuple[Grammar, ParserTables | None] | None":
    """The grammar and parser tables saved for ``constraint``, or None; the grammar holds its
    tables from now on (``parser_tables.build_parser_tables`` of it returns them), and a
    grammar equal to one loaded earlier is that one, while it lives. The arrays map the file
    copy-on-write: pages are read as the masks need them, and writes stay in this process."""
    where = folder()
    if where is None:
        return None
    path = where / file_name(constraint)
    try:
        with open(path, "rb") as file:
            mapped = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_COPY)
    except (OSError, ValueError):  # missing, or empty
        return None
    try:
        view = memoryview(mapped)
        magic, digest, length, count = _HEADER.unpack_from(view)
        if magic != _MAGIC:
            raise ValueError("not a built grammar")
        digest = digest.decode("ascii")
        with _loaded_lock:
            grammar = _loaded.get(digest)
            if grammar is not None:
                return grammar, handed_parser_tables(grammar)
        spans = struct.unpack_from(f"<{2 * count}Q", view, _HEADER.size)
        start = _HEADER.size + 16 * count
        buffers = [view[offset:offset + size] for offset, size in zip(spans[::2], spans[1::2])]
        with gc_paused:  # tens of thousands of new objects: collections of a full heap would triple the time
            grammar, tables = pickle.loads(view[start:start + length], buffers=buffers)
    except Exception as error:  # noqa: BLE001 - a damaged file only costs a build
        logger.warning("gramalign: ignoring the unreadable built grammar %s (%s: %s)", path, type(error).__name__,
                       error)
        return None
    if not isinstance(grammar, Grammar) or (tables is not None and tables.grammar is not grammar):
        return None
    remember_grammar_digest(grammar, digest)
    if tables is not None:
        remember_parser_tables(tables)
    with _loaded_lock:  # another thread may have loaded it meanwhile: one object per grammar
        found = _loaded.setdefault(digest, grammar)
    return found, handed_parser_tables(found)


def _trim(where: Path) -> None:
    entries = []
    for entry in where.glob("*.pickle"):
        try:
            info = entry.stat()
        except OSError:  # removed by another process meanwhile
            continue
        entries.append((info.st_mtime, info.st_size, entry))
    total = sum(size for _, size, _ in entries)
    for _, size, entry in sorted(entries, key=lambda item: item[0]):
        if total <= FOLDER_BYTES:
            break
        try:
            entry.unlink()
        except OSError:
            pass
        total -= size
