"""The ``format`` automata shipped with the package, and the generator that writes them.

Building the largest format automata takes a few hundred milliseconds in each process
(``hostname`` and ``email`` are length-counting products of ~24k states, ``time`` and
``date-time`` ~11k states for leap seconds), and their JSON spelling as much again. None
of it depends on the schema, so ``format_data/`` holds one ``<format>.npz`` per format of
:data:`~.formats.FORMATS` with

* ``contents_*``: the automaton :func:`~.formats.build_format_dfa` builds, and
* ``spelling_*``: its JSON spelling for ``string_escapes="minimal"`` (the default), as
  :func:`~.strings.json_string_dfa` builds it, with ``spelling_bound``, the ``max_states``
  below which that construction raises :class:`~..dfa.StateLimitError`,
* ``unbounded_*``, for ``hostname`` and ``email``: the automaton without its length bound,
  which schemas count instead (:func:`~.formats.counted_format`),

each in compact form: ``steps`` (the distinct columns of the byte table, [states, classes],
each target stored as its difference from the source state, which compresses several times
better; DEAD as the dtype's minimum; int16 below 32768 states, else int32), ``classes``
(int16 [256], the column each byte reads, -1 for DEAD), ``accepting``, ``initial`` and
``digest`` (:attr:`~..dfa.ByteDFA.digest`, which would otherwise cost a
hash of the expanded table: ~25 ms for 24k states). Expanding the table gives the
automaton the construction gives, state for state (mask caches on disk are keyed by its
digest). ``manifest.json`` names, per format, the file and a hash of its bytes, and the
*fingerprint* of the construction the files were written by: a hash of the source of the
modules that build them (this one, ``formats.py``, ``strings.py``, and ``regex.py``,
``dfa.py``, ``kernels.py``, ``member_sets.py``, ``algebra.py`` of ``grammar/automata/``) and
of the Unicode version.

:func:`shipped_format_dfa` uses a file only when the manifest's fingerprint is the current
one and the file's bytes hash to the manifest's value; otherwise (stale data after an edit
of those modules, a damaged file, sources not readable) it returns None and the caller
builds the automaton: the data can make a format slow again, never wrong. After changing
the construction, rewrite the data with ``python -m gramalign.grammar.json_schema.formats
--write-data`` (files whose arrays did not change keep their bytes); ``--check-data``
compares the shipped data with a fresh construction (``tests/test_json_schema_formats.py``
does too).
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
import unicodedata
import warnings
import zipfile
from functools import cached_property
from pathlib import Path

import numpy as np

from ..automata.dfa import DEAD, ByteDFA, distinct_columns
from .strings import register_shipped_spelling

__all__ = ["DATA_DIR", "construction_fingerprint", "format_arrays", "main", "read_format_file", "shipped_format_dfa",
           "write_data"]

LAYOUT = 1
"""Version of the file layout (bump when the arrays or the manifest change meaning)."""

DATA_DIR = Path(__file__).with_name("format_data")
MANIFEST_NAME = "manifest.json"
_SOURCES = ("json_schema/format_data.py", "json_schema/formats.py", "json_schema/strings.py", "automata/regex.py",
            "automata/dfa.py", "automata/kernels.py", "automata/member_sets.py", "automata/algebra.py")
"""The modules whose code builds the shipped automata, relative to ``gramalign/grammar``."""
_ROLES = ("contents", "spelling")

_fingerprint: list[str | None] = []


def construction_fingerprint() -> str | None:
    """Hash of the sources that construct the format automata (None where they cannot be
    read: the shipped data is then never used). Computed once per process."""
    if not _fingerprint:
        grammar_dir = Path(__file__).resolve().parent.parent
        digest = hashlib.blake2b(digest_size=16)
        digest.update(f"layout {LAYOUT}; unicode {unicodedata.unidata_version}\n".encode())
        try:
            for relative in _SOURCES:
                text = (grammar_dir / relative).read_bytes().replace(b"\r\n", b"\n")
                digest.update(relative.encode() + b"\0" + len(text).to_bytes(8, "little") + text)
        except OSError:
            _fingerprint.append(None)
        else:
            _fingerprint.append(digest.hexdigest())
    return _fingerprint[0]


def _file_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _read_manifest(directory: Path) -> dict | None:
    try:
        manifest = json.loads((directory / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("layout") != LAYOUT or not isinstance(manifest.get("formats"),
                                                                                               dict):
        return None
    return manifest


# --------------------------------------------------------------------------- loading


class ShippedFormat:
    """One format's file, read and verified; its automata are expanded on demand."""

    def __init__(self, name: str, archive):
        self.name = name
        self._archive = archive
        self.spelling_bound = int(archive["spelling_bound"])

    def automaton(self, role: str, *, lazy: bool = False) -> ByteDFA:
        """The ``contents`` or ``spelling`` automaton (a new ByteDFA each call, its table
        expanded on first use when ``lazy``); ValueError for arrays that cannot be one."""
        return _decode(self._archive, role + "_", lazy=lazy)

    def contents(self) -> ByteDFA:
        return self.automaton("contents", lazy=True)

    def spelling(self, max_states: int) -> ByteDFA | None:
        """The minimal-escape spelling, or None where building it under ``max_states``
        would raise StateLimitError (the caller then builds it, and it raises). Not kept
        here: json_string_dfa's bounded cache holds it, and reads it again once evicted."""
        if max_states < self.spelling_bound:
            return None
        try:
            return self.automaton("spelling", lazy=True)
        except Exception:  # noqa: BLE001 — unreadable data is ignored, never trusted
            return None


def read_format_file(name: str, directory: Path | None = None, *, check_fingerprint: bool = True
                     ) -> ShippedFormat | None:
    """The verified data of format ``name`` in ``directory``, or None: no manifest or entry,
    a manifest written by another construction (unless ``check_fingerprint`` is False, for
    tests that compare stale data with a fresh construction), a file whose bytes do not hash
    to the manifest's value, or one that is not a readable archive."""
    directory = DATA_DIR if directory is None else Path(directory)
    manifest = _read_manifest(directory)
    if manifest is None:
        return None
    if check_fingerprint and (manifest.get("fingerprint") is None
                              or manifest.get("fingerprint") != construction_fingerprint()):
        return None
    entry = manifest["formats"].get(name)
    if not isinstance(entry, dict) or not isinstance(entry.get("file"), str) \
            or entry["file"] != Path(entry["file"]).name or entry["file"] in ("", ".", ".."):
        return None
    try:
        data = (directory / entry["file"]).read_bytes()
    except OSError:
        return None
    if _file_hash(data) != entry.get("blake2b"):
        warnings.warn(f"gramalign: the shipped automaton data of format {name!r} is damaged "
                      f"({directory / entry['file']}); building it instead", RuntimeWarning, stacklevel=2)
        return None
    try:
        return ShippedFormat(name, np.load(io.BytesIO(data), allow_pickle=False))
    except Exception:  # noqa: BLE001 — unreadable data is ignored, never trusted
        return None


def shipped_format_dfa(name: str, directory: Path | None = None) -> ByteDFA | None:
    """The shipped contents automaton of format ``name`` (identical to a fresh construction),
    its spelling registered with :func:`~.strings.json_string_dfa`; None when there is no
    usable data (see :func:`read_format_file`)."""
    shipped = read_format_file(name, directory)
    if shipped is None:
        return None
    try:
        contents = shipped.contents()
    except Exception:  # noqa: BLE001
        return None
    register_shipped_spelling(contents.digest, shipped.spelling)
    return contents


def shipped_unbounded_dfa(name: str, directory: Path | None = None) -> ByteDFA | None:
    """The shipped automaton of a counted format without its length bound (see
    ``formats.counted_format``), or None."""
    shipped = read_format_file(name, directory)
    if shipped is None or "unbounded_initial" not in shipped._archive:
        return None
    try:
        return shipped.automaton("unbounded")
    except Exception:  # noqa: BLE001
        return None


def _decode(archive, prefix: str, *, lazy: bool = False) -> ByteDFA:
    """Read and check one compact automaton (every index it holds must be in range: numba
    kernels index with them unchecked) and expand its table, at once or, when ``lazy``, on
    first use of ``transitions``."""
    steps = archive[prefix + "steps"]
    classes = archive[prefix + "classes"]
    accepting = archive[prefix + "accepting"]
    initial = int(archive[prefix + "initial"])
    digest = archive[prefix + "digest"]
    if steps.ndim != 2 or steps.dtype not in (np.int16, np.int32) or classes.shape != (256,) \
            or classes.dtype.kind != "i":
        raise ValueError("malformed automaton table")
    n, k = steps.shape
    table = steps.astype(np.int32)
    table += np.arange(n, dtype=np.int32)[:, None]
    table[steps == np.iinfo(steps.dtype).min] = DEAD
    if accepting.shape != (n,) or accepting.dtype != bool or digest.shape != (16,) or digest.dtype != np.uint8:
        raise ValueError("malformed automaton flags")
    if n == 0 or not 0 <= initial < n or (table.size and (table.min() < DEAD or table.max() >= n)) \
            or classes.min() < -1 or classes.max() >= k:
        raise ValueError("automaton index out of range")
    if lazy:
        dfa = _LazyTable(table, classes, initial, accepting)
    else:
        dfa = ByteDFA(_expand(table, classes), initial, accepting)
    dfa.__dict__["digest"] = digest.tobytes()  # the cached_property, computed when written
    return dfa


def _expand(table: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """The byte table [n, 256]: byte b reads column ``classes[b]`` of ``table`` (-1: DEAD)."""
    n, k = table.shape
    columns = np.empty((n, k + 1), dtype=np.int32)  # the last column is DEAD, for class -1
    columns[:, :k] = table
    columns[:, k] = DEAD
    transitions = np.empty((n, 256), dtype=np.int32)  # C order, as every table (columns[:, i] is not)
    np.take(columns, np.where(classes < 0, k, classes).astype(np.intp), axis=1, out=transitions, mode="clip")
    return transitions


class _LazyTable(ByteDFA):
    """A shipped ByteDFA whose byte table is expanded from its columns on first use.

    A format's contents automaton is often used only for its digest (the key under which
    its spelling is found), and expanding 24k states writes 25 MB. ``transitions`` is a
    cached property here (ByteDFA's field is left unset, so the property answers); once
    read it is the table a fresh construction gives. A lexer writes its block from the
    columns (:meth:`known_columns`): a format's spelling is a terminal's whole automaton, and
    a lazily built lexer need never expand it. Pickled as a plain ByteDFA."""

    def __init__(self, table: np.ndarray, classes: np.ndarray, initial: int, accepting: np.ndarray):
        object.__setattr__(self, "initial", initial)
        object.__setattr__(self, "accepting", accepting)
        object.__setattr__(self, "_columns", (table, classes))

    @cached_property
    def transitions(self) -> np.ndarray:  # type: ignore[override]
        return _expand(*self._columns)

    @property
    def num_states(self) -> int:
        return int(self._columns[0].shape[0])

    def known_columns(self) -> "tuple[np.ndarray, np.ndarray] | None":
        table, classes = self._columns
        if classes.min() < 0:  # a DEAD column by class -1 (never written: _compact numbers every byte)
            return None
        return classes.astype(np.int64), table

    def __reduce__(self):
        return ByteDFA, (self.transitions, self.initial, self.accepting)


# --------------------------------------------------------------------------- writing


def _compact(dfa: ByteDFA, prefix: str) -> dict[str, np.ndarray]:
    table, class_of_byte = distinct_columns(dfa.transitions)
    n = table.shape[0]
    dtype = np.int16 if n <= np.iinfo(np.int16).max else np.int32
    steps = table.astype(np.int64) - np.arange(n)[:, None]  # small numbers: they compress well
    steps[table == DEAD] = np.iinfo(dtype).min
    return {prefix + "steps": steps.astype(dtype),
            prefix + "classes": class_of_byte.astype(np.int16),
            prefix + "accepting": np.ascontiguousarray(dfa.accepting, dtype=bool),
            prefix + "initial": np.array(dfa.initial, dtype=np.int64),
            prefix + "digest": np.frombuffer(dfa.digest, dtype=np.uint8).copy()}


def format_arrays(name: str) -> tuple[dict[str, np.ndarray], dict[str, ByteDFA]]:
    """The arrays of format ``name``'s file, from a fresh construction, and the automata
    they hold (``contents``, ``spelling``)."""
    from .formats import build_format_dfa
    from .strings import minimally_escaped, minimal_spelling_states

    from .formats import build_unbounded_dfa

    contents = build_format_dfa(name)
    bound = minimal_spelling_states(contents)
    spelling = minimally_escaped(contents, bound)  # raises if the bound were too small
    arrays = {**_compact(contents, "contents_"), **_compact(spelling, "spelling_"),
              "spelling_bound": np.array(bound, dtype=np.int64)}
    automata = {"contents": contents, "spelling": spelling}
    unbounded = build_unbounded_dfa(name)
    if unbounded is not None:  # a format whose length bound schemas count (formats.counted_format)
        arrays.update(_compact(unbounded, "unbounded_"))
        automata["unbounded"] = unbounded
    return arrays, automata


def _archive_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """An ``.npz`` whose bytes depend on the arrays only (fixed member order and dates)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for key in sorted(arrays):
            member = io.BytesIO()
            np.lib.format.write_array(member, arrays[key], allow_pickle=False)
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            archive.writestr(info, member.getvalue(), compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    return buffer.getvalue()


def _same_arrays(data: bytes, arrays: dict[str, np.ndarray]) -> bool:
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as old:
            return sorted(old.files) == sorted(arrays) and all(
                old[key].dtype == value.dtype and np.array_equal(old[key], value) for key, value in arrays.items())
    except Exception:  # noqa: BLE001
        return False


def write_data(directory: Path | None = None, *, names=None, log=None) -> dict:
    """Build every format (or only ``names``, for tests) from scratch and (re)write its file
    and the manifest in ``directory``; a file whose arrays are unchanged keeps its bytes, and
    after a full write the files of no format are removed. Returns the manifest."""
    from .formats import FORMATS

    directory = DATA_DIR if directory is None else Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    entries = {}
    for name in sorted(FORMATS if names is None else names):
        arrays, automata = format_arrays(name)
        path = directory / f"{name}.npz"
        data = path.read_bytes() if path.exists() else b""
        if not _same_arrays(data, arrays):
            data = _archive_bytes(arrays)
            path.write_bytes(data)
        shipped = ShippedFormat(name, np.load(io.BytesIO(data), allow_pickle=False))
        for role, built in automata.items():  # what a process will load is what was built
            _assert_identical(shipped.automaton(role), built, f"{name} {role}")
        entries[name] = {"file": path.name, "blake2b": _file_hash(data), "bytes": len(data),
                         "states": automata["contents"].num_states, "spelling_states": automata["spelling"].num_states}
        if log:
            log(f"{name}: {entries[name]['states']} + {entries[name]['spelling_states']} states, {len(data)} bytes")
    manifest = {"layout": LAYOUT, "fingerprint": construction_fingerprint(), "formats": entries}
    (directory / MANIFEST_NAME).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    if names is None:
        for stale in directory.glob("*.npz"):
            if stale.name not in {entry["file"] for entry in entries.values()}:
                stale.unlink()
    return manifest


def _assert_identical(loaded: ByteDFA, built: ByteDFA, what: str) -> None:
    if not (loaded.initial == built.initial and np.array_equal(loaded.transitions, built.transitions)
            and np.array_equal(loaded.accepting, built.accepting) and loaded.digest == built.digest):
        raise AssertionError(f"the shipped {what} automaton differs from the construction")


def check_data(directory: Path | None = None, *, log=print) -> bool:
    """True when every format's shipped data is current and identical to a fresh construction."""
    from .formats import FORMATS

    good = True
    for name in sorted(FORMATS):
        shipped = read_format_file(name, directory)
        if shipped is None:
            log(f"{name}: no usable shipped data (missing, damaged, or written by another construction)")
            good = False
            continue
        _, automata = format_arrays(name)
        try:
            for role, built in automata.items():
                _assert_identical(shipped.automaton(role), built, f"{name} {role}")
        except (AssertionError, ValueError) as exc:
            log(f"{name}: {exc}")
            good = False
    return good


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m gramalign.grammar.json_schema.formats",
                                     description="Write or check the format automata shipped with gramalign.")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write-data", nargs="?", const=str(DATA_DIR), metavar="DIR",
                        help=f"rebuild every format and write its data (default {DATA_DIR})")
    action.add_argument("--check-data", nargs="?", const=str(DATA_DIR), metavar="DIR",
                        help="compare the shipped data with a fresh construction (exit status 1 if not identical)")
    args = parser.parse_args(argv)
    if args.write_data is not None:
        manifest = write_data(Path(args.write_data), log=print)
        total = sum(entry["bytes"] for entry in manifest["formats"].values())
        print(f"wrote {len(manifest['formats'])} formats, {total} bytes, fingerprint {manifest['fingerprint']}")
        return 0
    good = check_data(Path(args.check_data))
    print("shipped format data is current" if good else "shipped format data is stale: run --write-data",
          file=sys.stdout if good else sys.stderr)
    return 0 if good else 1
