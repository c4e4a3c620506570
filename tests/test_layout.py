"""The package's layout: private names stay private, files stay small.

* No module imports a private name (one leading underscore, not a dunder)
  of another ultrafs module, neither by ``from X import _name`` nor by
  ``alias._name`` on a module bound by ``import X [as alias]`` or
  ``from P import module``. Inside one module private names are fine.
* Private names of third-party libraries (numba, scipy, ... internals) are
  reported separately; each one must be listed, with the reason, in
  ``THIRD_PARTY_PRIVATE``.
* Private attributes read by name (``getattr(obj, "_x")`` and kin) on
  anything but ``self`` / ``cls`` are listed in ``GETATTR_PRIVATE``.
* No Python file under ``ultrafs/`` has more than ``MAX_LINES`` lines.

The kernels live in ``kernels/`` (``ultrafs/kernels`` is a symlink to it,
installed as ``ultrafs.kernels``); they are scanned once, as
``ultrafs.kernels.<name>``.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "ultrafs"
MAX_LINES = 800

#: Private names of third-party libraries that ultrafs uses on purpose:
#: ``(importing file, "module.name")`` -> why. Anything else fails.
THIRD_PARTY_PRIVATE: dict[tuple[str, str], str] = {
    # starts numba's threading layer without compiling a kernel (what numba's
    # first parallel launch calls); row_chunks falls back to a trivial kernel
    # where a numba lacks it
    ("kernels/row_chunks.py", "numba.np.ufunc.parallel._launch_threads"):
        "start the threading layer without a compile",
}


#: Private attributes read by name (``getattr`` / ``hasattr`` / ``setattr``
#: with a ``"_name"`` string) on objects other than ``self`` / ``cls``:
#: ``(file, "_name")`` -> why. Anything else fails.
GETATTR_PRIVATE: dict[tuple[str, str], str] = {
    # concurrent.futures.ProcessPoolExecutor has no public "broken" flag: a
    # kept pool whose worker died is replaced instead of reused
    ("ultrafs/scoring/scheduling.py", "_broken"): "a broken process pool is replaced",
}


def _module_files() -> dict[str, Path]:
    """Dotted module name -> file, for ultrafs/ and the kernels (once)."""
    modules = {}
    package_dir = ROOT / PACKAGE
    for dirpath, dirnames, filenames in os.walk(package_dir, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames
                             if not (here / d).is_symlink() and d != "__pycache__")
        for filename in sorted(filenames):
            if not filename.endswith(".py"):
                continue
            path = here / filename
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    for path in sorted((ROOT / "kernels").glob("*.py")):
        stem = path.stem
        name = f"{PACKAGE}.kernels" if stem == "__init__" else f"{PACKAGE}.kernels.{stem}"
        modules[name] = path
    return modules


MODULES = _module_files()


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def _canonical(module: str) -> str:
    """``kernels.x`` (the top-level name of the kernels) -> ``ultrafs.kernels.x``."""
    if module == "kernels" or module.startswith("kernels."):
        return f"{PACKAGE}.{module}"
    return module


def _resolve(current: str, node: ast.ImportFrom) -> str:
    """Absolute module of a ``from ... import`` in module ``current``."""
    if node.level == 0:
        return _canonical(node.module)
    base = current if _is_package(current) else current.rpartition(".")[0]
    for _ in range(node.level - 1):
        base = base.rpartition(".")[0]
    return f"{base}.{node.module}" if node.module else base


def _ours(module: str) -> bool:
    return module == PACKAGE or module.startswith(PACKAGE + ".")


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _scan(current: str, where: str, source: str):
    """(ours, third-party): lists of (file:line, what) private-name uses.

    ``current`` is the dotted name of the module whose ``source`` is scanned,
    ``where`` its path for the messages.
    """
    ours, third = [], []
    tree = ast.parse(source, filename=where)

    def report(lineno, module, name):
        entry = (f"{where}:{lineno}", f"{module}.{name}")
        if not _ours(module):
            third.append(entry)
        elif module != current:
            ours.append(entry)

    bound = {}  # local name -> module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _canonical(alias.name)
                if alias.asname:
                    bound[alias.asname] = target
                else:
                    top = alias.name.split(".")[0]
                    bound[top] = _canonical(top)
        elif isinstance(node, ast.ImportFrom):
            module = _resolve(current, node)
            for alias in node.names:
                if alias.name == "*":
                    continue
                submodule = f"{module}.{alias.name}"
                if submodule in MODULES:
                    bound[alias.asname or alias.name] = submodule
                if _is_private(alias.name):
                    # a package importing its own private submodule is inside it
                    if submodule in MODULES and module == current:
                        continue
                    report(node.lineno, module, alias.name)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        chain = []
        inner = node
        while isinstance(inner, ast.Attribute):
            chain.append(inner.attr)
            inner = inner.value
        if not isinstance(inner, ast.Name) or inner.id not in bound:
            continue
        # only the outermost attribute of a chain starts a check
        chain.reverse()
        module = bound[inner.id]
        for attr in chain:
            if _is_private(attr):
                report(node.lineno, module, attr)
                break
            if f"{module}.{attr}" in MODULES:
                module = f"{module}.{attr}"
            else:
                break
    return ours, third


def _checked_files():
    for module, path in sorted(MODULES.items()):
        rel = _rel(path)
        yield module, path


def _all_uses():
    ours, third = set(), set()
    for module, path in _checked_files():
        o, t = _scan(module, _rel(path), path.read_text())
        ours.update(o)
        third.update(t)
    return sorted(ours), sorted(third)


def test_no_module_uses_a_private_name_of_another():
    ours, _ = _all_uses()
    assert not ours, "private names of other ultrafs modules:\n" + "\n".join(
        f"  {where}: {what}" for where, what in ours)


def test_third_party_private_names_are_listed():
    _, third = _all_uses()
    unlisted = [(where, what) for where, what in third
                if (where.split(":")[0], what) not in THIRD_PARTY_PRIVATE]
    assert not unlisted, ("private names of third-party libraries, not in "
                          "THIRD_PARTY_PRIVATE:\n" + "\n".join(
                              f"  {where}: {what}" for where, what in unlisted))
    used = {(where.split(":")[0], what) for where, what in third}
    stale = sorted(set(THIRD_PARTY_PRIVATE) - used)
    assert not stale, f"THIRD_PARTY_PRIVATE lists uses that are gone: {stale}"


def _private_getattrs(where: str, source: str):
    """(file:line, name) of ``getattr(obj, "_name")`` and kin, obj not self/cls."""
    found = []
    for node in ast.walk(ast.parse(source, filename=where)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr", "setattr", "delattr")
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str) and _is_private(node.args[1].value)
                and not (isinstance(node.args[0], ast.Name)
                         and node.args[0].id in ("self", "cls"))):
            found.append((f"{where}:{node.lineno}", node.args[1].value))
    return found


def test_private_attributes_by_name_are_listed():
    found = []
    for _, path in _checked_files():
        found += _private_getattrs(_rel(path), path.read_text())
    unlisted = [(where, name) for where, name in found
                if (where.split(":")[0], name) not in GETATTR_PRIVATE]
    assert not unlisted, ("private attributes read by name, not in GETATTR_PRIVATE:\n"
                          + "\n".join(f"  {where}: {name}" for where, name in unlisted))
    stale = sorted(set(GETATTR_PRIVATE) - {(w.split(":")[0], n) for w, n in found})
    assert not stale, f"GETATTR_PRIVATE lists uses that are gone: {stale}"


def test_no_file_is_too_long():
    long = []
    for _, path in sorted(MODULES.items()):
        rel = _rel(path)
        n_lines = len(path.read_text().splitlines())
        if n_lines > MAX_LINES:
            long.append(f"  {rel}: {n_lines} lines")
    assert not long, f"files over {MAX_LINES} lines:\n" + "\n".join(long)


def test_the_scan_sees_private_names():
    """The scanner itself, on a probe module of the package."""
    source = ("from ultrafs.store import base\n"
              "from ultrafs.model import _x, public\n"
              "from ultrafs.kernels.scoring import _heap_push\n"
              "import ultrafs.store.base as b\n"
              "import ultrafs.store.base\n"
              "import numba.core._internal as nci\n"
              "from scipy.sparse import _sputils\n"
              "b._y\nbase._z\nbase.public\nb.__doc__\n"
              "ultrafs.store.base._w\n"
              "def _own():\n    return _own\n")
    ours, third = _scan("ultrafs._layout_probe", "probe.py", source)
    assert sorted(what for _, what in ours) == [
        "ultrafs.kernels.scoring._heap_push", "ultrafs.model._x",
        "ultrafs.store.base._w", "ultrafs.store.base._y",
        "ultrafs.store.base._z"]
    assert sorted(what for _, what in third) == ["scipy.sparse._sputils"]
    # inside one module private names are fine
    ours, _ = _scan("ultrafs.store.base", "base.py", "import ultrafs.store.base as b\nb._y\n")
    assert not ours
    # private attributes by name: on another object only
    assert _private_getattrs("probe.py", "getattr(self, '_a')\ngetattr(pool, '_b', 0)\n"
                             "hasattr(x, '__len__')\n") == [("probe.py:2", "_b")]
