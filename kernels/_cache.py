"""Where numba caches the ultrafs kernels, and the notice on their first compile.

Every kernel is ``njit(cache=True)``. Left to itself numba writes that cache
next to the source, into ``<package>/__pycache__``: for a regular install
that is ``site-packages/ultrafs/kernels/__pycache__``, a folder pip does not
know about and leaves behind on uninstall (it then turns
``site-packages/ultrafs`` into an empty namespace package that shadows a
later editable install), and one that is often read-only anyway.

:func:`install` (run by ``kernels/__init__.py``, before any kernel module is
imported) therefore adds one cache locator to numba's list, right after
numba's own ``NUMBA_CACHE_DIR`` locator. It claims only functions defined in
files of this package, so other libraries' kernels and numba's global
settings are left alone (``numba.config.CACHE_DIR`` is not touched). For the
ultrafs kernels the cache goes to, in order:

1. ``$NUMBA_CACHE_DIR`` when set and writable (numba's own locator, first);
2. the per-user cache folder: ``$XDG_CACHE_HOME/ultrafs/numba``, by default
   ``~/.cache/ultrafs/numba`` (the platform's user cache folder on macOS and
   Windows);
3. when that is not writable, a private temporary folder of this process
   (removed at exit): kernels then compile in every new process, but nothing
   is ever written inside the installed package.

Subfolders are named by numba (source folder name + hash of its path), so
several installs or checkouts never share entries.

:func:`install` also registers a listener on numba's ``numba:compile``
event, which numba emits only for a real compile (not for a cache hit), and
prints one line on stderr the first time, in this process, that an ultrafs
kernel is compiled.

This module imports nothing of ultrafs (``kernels/`` is standalone) and
works with numba 0.58 (whose caching classes carry a leading underscore)
through 0.68.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
import threading

from numba.core import caching as _caching
from numba.core import event as _event

# the figures: bench/README.md §20.2 (bench/compile_cost.py): ultrafs demo
# compiles for 21-23 s on a quiet machine (28 s of CPU at a load of 11 on 2
# cores), each further method for 7 s or less; a method run first compiles
# the shared FGM kernels too (16-31 s); compiles run on one thread, so a
# loaded machine takes several times that in wall time (5x at load 11)
NOTICE = ("{pkg}: compiling numba kernels for first use (up to about 30 s of "
          "CPU time, longer on a busy machine; cached for later runs)")
NOTICE_UNCACHED = ("{pkg}: compiling numba kernels (up to about 30 s of CPU time; "
                   "not cached: {where} is not writable)")

_PACKAGE = __name__.rpartition(".")[0]   # "ultrafs.kernels"
_DISPLAY = "ultrafs"                     # the notice's prefix, the cache folder's name
_PACKAGE_DIR = os.path.realpath(os.path.dirname(__file__))

_lock = threading.Lock()
_notice_done = False
_private_dir = None        # the per-process fallback folder, once created
_unwritable = None         # the user cache folder that could not be used

# numba 0.58-0.6x name these with a leading underscore; later versions without
_CacheImpl = getattr(_caching, "CacheImpl", None) or _caching._CacheImpl
_CacheLocator = _caching._CacheLocator
_SourceFileBacked = _caching._SourceFileBackedLocatorMixin
_UserProvided = (getattr(_caching, "UserProvidedCacheLocator", None)
                 or _caching._UserProvidedCacheLocator)


def user_cache_dir() -> str:
    """The per-user folder of the ultrafs kernel cache (it may not exist yet)."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if sys.platform.startswith("linux") or os.path.isabs(xdg):
        base = xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"),
                                                            ".cache")
        return os.path.join(base, _DISPLAY, "numba")
    try:  # macOS: ~/Library/Caches/ultrafs, Windows: %LOCALAPPDATA%\ultrafs\Cache
        from numba.misc.appdirs import AppDirs

        base = AppDirs(appname=_DISPLAY, appauthor=False).user_cache_dir
    except Exception:  # pragma: no cover - numba always ships appdirs
        base = os.path.join(os.path.expanduser("~"), ".cache", _DISPLAY)
    return os.path.join(base, "numba")


def is_kernel_file(py_file: str) -> bool:
    """Whether *py_file* is a source file of this kernels package."""
    try:
        folder = os.path.dirname(os.path.realpath(py_file))
    except (TypeError, ValueError):
        return False
    return folder == _PACKAGE_DIR or folder.startswith(_PACKAGE_DIR + os.sep)


def _private_cache_dir() -> str:
    global _private_dir
    with _lock:
        if _private_dir is None:
            _private_dir = tempfile.mkdtemp(prefix=f"{_DISPLAY}-numba-")
            atexit.register(shutil.rmtree, _private_dir, True)
        return _private_dir


class KernelCacheLocator(_SourceFileBacked, _CacheLocator):
    """numba cache locator for the functions of this package only.

    Source stamps and disambiguators are numba's own (source file backed);
    only the folder differs from numba's in-tree ``__pycache__``.
    """

    def __init__(self, py_func, py_file, root):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = os.path.join(root, self.get_suitable_cache_subpath(py_file))

    def get_cache_path(self):
        return self._cache_path

    @classmethod
    def from_function(cls, py_func, py_file):
        global _unwritable
        if not os.path.exists(py_file) or not is_kernel_file(py_file):
            return None      # not ours: numba's usual locators take it
        root = user_cache_dir()
        try:
            self = cls(py_func, py_file, root)
            self.ensure_cache_path()
            return self
        except OSError:
            _unwritable = root
        try:
            self = cls(py_func, py_file, _private_cache_dir())
            self.ensure_cache_path()
            return self
        except OSError:
            # not even a temporary folder can be written: numba's usual
            # locators decide (its in-tree one can hardly succeed then)
            return None


def _is_kernel(dispatcher) -> bool:
    module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
    return module == _PACKAGE or module.startswith(_PACKAGE + ".")


class _CompileNotice(_event.Listener):
    """Prints one line when the first ultrafs kernel of this process compiles."""

    def on_start(self, event):
        global _notice_done
        if _notice_done or not _is_kernel(event.data.get("dispatcher")):
            return
        with _lock:
            if _notice_done:
                return
            _notice_done = True
        if _unwritable is not None:     # the kernels went to a private folder
            line = NOTICE_UNCACHED.format(pkg=_DISPLAY, where=_unwritable)
        else:
            line = NOTICE.format(pkg=_DISPLAY)
        try:
            print(line, file=sys.stderr, flush=True)
        except Exception:  # a closed or missing stderr must not break a compile
            pass

    def on_end(self, event):
        pass


_installed = False


def install() -> None:
    """Put :class:`KernelCacheLocator` in numba's list and listen for compiles.

    Idempotent. The locator goes right after numba's ``NUMBA_CACHE_DIR``
    locator (so that variable still wins) and before its in-tree
    ``__pycache__`` locator. The list is edited in place, so every numba cache
    implementation that shares it (all CPU ``njit`` caches) sees the change.
    """
    global _installed
    with _lock:
        if _installed:
            return
        classes = _CacheImpl._locator_classes
        for i, cls in enumerate(classes):   # a re-imported module: replace
            if getattr(cls, "__qualname__", "") == KernelCacheLocator.__qualname__ \
                    and getattr(cls, "__module__", "") == __name__:
                del classes[i]
                break
        try:
            position = classes.index(_UserProvided) + 1
        except ValueError:
            position = 0
        classes.insert(position, KernelCacheLocator)
        _event.register("numba:compile", _CompileNotice())
        _installed = True
