"""Imports go one way (docs/architecture.md): read from every module's source with ``ast``,
so a lazy import inside a function counts as much as one at the top."""

import ast
import re
from pathlib import Path

import gramalign

PACKAGE = Path(gramalign.__file__).parent
# What each layer may import from gramalign, besides itself and the shared leaf modules.
LEAVES = {"errors", "bitsets", "heap", "jit", "kernel_cache"}
ALLOWED = {
    "grammar": set(),
    "parsing": {"grammar"},
    "tokens": set(),  # knows no grammar
    "masking": {"grammar", "parsing", "tokens"},
    "samplers": {"grammar", "parsing", "tokens", "masking"},
    "integrations": {"grammar", "parsing", "tokens", "masking", "samplers", "__init__"},  # __version__
}


def _import_targets(path: Path, root: Path = PACKAGE) -> list[list[str]]:
    """What a module imports from gramalign, as paths below the package (``["grammar",
    "dfa"]``); a name taken from a package (``from .. import x``) is that package's ``x``."""
    parts = path.relative_to(root).with_suffix("").parts
    package = parts[:-1]  # the folder holds the module, __init__.py included
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the module's package
                base = package[:len(package) - node.level + 1]
                target = list(base) + (node.module.split(".") if node.module else [])
                found += [target] if node.module else [list(base) + [a.name] for a in node.names]
            elif node.module and node.module.split(".")[0] == "gramalign":
                found.append(node.module.split(".")[1:])
        elif isinstance(node, ast.Import):
            found += [a.name.split(".")[1:] for a in node.names if a.name.split(".")[0] == "gramalign"]
    return found


def _imported(path: Path, root: Path = PACKAGE) -> set[str]:
    """The gramalign top-level parts (``grammar``, ``errors``...) a module imports; a name
    taken from the package itself (``from .. import __version__``) is ``__init__``."""
    found = set()
    for name in _import_targets(path, root):
        if name:
            is_module = (root / name[0]).is_dir() or (root / f"{name[0]}.py").exists()
            found.add(name[0] if is_module else "__init__")
    return found


def test_each_layer_imports_only_the_layers_below_it():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        layer = path.relative_to(PACKAGE).parts[0]
        if layer not in ALLOWED:
            continue
        for part in _imported(path) - LEAVES - {layer}:
            if part not in ALLOWED[layer]:
                wrong.append(f"{path.relative_to(PACKAGE)} imports {part}")
    assert wrong == []


def test_the_check_sees_relative_and_lazy_imports(tmp_path):
    # the reader itself, on a module that breaks the rule in each way it could be written
    root = tmp_path / "gramalign"
    for part in ("grammar", "parsing", "masking", "samplers"):
        (root / part).mkdir(parents=True)
    probe = root / "grammar" / "probe.py"
    probe.write_text("from ..parsing import stacks\nfrom .. import errors\n\ndef f():\n"
                     "    from gramalign.masking import matcher\n    import gramalign.samplers.smc\n")
    (root / "errors.py").write_text("")
    assert _imported(probe, root) == {"parsing", "masking", "samplers", "errors"}


def documented_paths(doc: str) -> set[str]:
    """The paths the tree of docs/architecture.md names, relative to ``src/gramalign/``: each
    entry is indented two spaces under its folder (``automata/`` then ``  regex.py``), and a
    line may name several entries before its description (``numbers.py, strings.py   ...``)."""
    block = doc.split("```\nsrc/gramalign/\n", 1)[1].split("```", 1)[0]
    folders: list[tuple[int, str]] = []  # (indent, folder path) of the enclosing folders
    found = set()
    for line in block.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        names = re.match(r"[\w.*/]+(?:, [\w.*/]+)*", line.strip())
        entries = names.group().split(", ") if names else []
        if not entries or not all(n.endswith((".py", "/")) or "*" in n for n in entries):
            continue  # a description's second line
        while folders and folders[-1][0] >= indent:
            folders.pop()
        prefix = folders[-1][1] if folders else ""
        for name in entries:
            found.add(prefix + name)
        if len(entries) == 1 and entries[0].endswith("/"):
            folders.append((indent, prefix + entries[0]))
    return found


def test_the_architecture_doc_lists_every_module():
    # docs/architecture.md's tree is the map a newcomer reads: it names every module, in its folder
    listed = documented_paths((PACKAGE.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8"))
    missing = [path.relative_to(PACKAGE).as_posix() for path in sorted(PACKAGE.rglob("*.py"))
               if path.name != "__init__.py" and path.relative_to(PACKAGE).as_posix() not in listed]
    assert missing == []


def test_the_doc_tree_reader_reads_folders_by_indentation():
    doc = ("```\nsrc/gramalign/\n  grammar/   the language\n    automata/   regexes\n      dfa.py   tables\n"
           "                 more about tables\n    lalr.py   LR\n    a.py, b/   two\n  errors.py   errors\n```\n")
    assert documented_paths(doc) == {"grammar/", "grammar/automata/", "grammar/automata/dfa.py", "grammar/lalr.py",
                                     "grammar/a.py", "grammar/b/", "errors.py"}


def test_the_automata_toolkit_knows_no_grammar():
    # grammar/automata/ is regexes and automata: only itself, the compile budgets and the leaves
    allowed = ("grammar.automata", "grammar.limits", *LEAVES)
    wrong = [f"{path.relative_to(PACKAGE)} imports {module}"
             for path in sorted((PACKAGE / "grammar" / "automata").rglob("*.py"))
             for module in {".".join(name) for name in _import_targets(path)}
             if not any(module == a or module.startswith(a + ".") for a in allowed)]
    assert wrong == []


def _private_imports(path: Path, root: Path = PACKAGE) -> list[str]:
    """``module._name`` for each private name a module imports from another gramalign module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] == "gramalign"):
            where = "." * node.level + (f"{node.module}." if node.module else "")
            found += [where + a.name for a in node.names
                      if a.name.startswith("_") and not a.name.startswith("__")]
    return found


def test_no_module_imports_another_modules_private_names():
    # a helper two modules share is a public name of the module that owns it (the package's
    # __all__ keeps it out of the user API); "_" means "this module only, change freely"
    wrong = [f"{path.relative_to(PACKAGE)}: {name}" for path in sorted(PACKAGE.rglob("*.py"))
             for name in _private_imports(path)]
    assert wrong == []


def test_the_private_import_check_sees_each_form(tmp_path):
    probe = tmp_path / "gramalign" / "grammar" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("from .dfa import _a, b\nfrom gramalign.tokens.eos import _c\nfrom __future__ import annotations\n"
                     "def f():\n    from .. import _d\n    from .x import __version__\n")
    assert sorted(_private_imports(probe, tmp_path / "gramalign")) == [".._d", ".dfa._a", "gramalign.tokens.eos._c"]


MAX_PARAMETERS = 16
"""More than this and a kernel's arrays belong in named bundles (see gramalign.jit): two
int32 arrays swapped by position in a 30-parameter call still compile and run."""


def _long_signatures(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            count = (len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + (a.vararg is not None)
                     + (a.kwarg is not None))
            if count > MAX_PARAMETERS:
                found.append(f"{getattr(node, 'name', 'lambda')} ({count}, line {node.lineno})")
    return found


def test_no_function_takes_more_than_sixteen_parameters(tmp_path):
    wrong = [f"{path.relative_to(PACKAGE)}: {name}" for path in sorted(PACKAGE.rglob("*.py"))
             for name in _long_signatures(path)]
    assert wrong == []
    probe = tmp_path / "probe.py"
    probe.write_text("def f(" + ", ".join(f"a{k}" for k in range(17)) + "):\n    pass\n"
                     "def g(" + ", ".join(f"a{k}" for k in range(15)) + ", *rest):\n    pass\n")
    assert _long_signatures(probe) == ["f (17, line 1)"]
