"""One BLAS thread for the search's own products (issue 16's search speed).

The vector pass (``Vectors.top``) is a matrix-vector product over the whole
matrix (at 100k chunks, 26 MB of the PCA-reduced rows): memory-bound, and
numpy hands it to its OpenBLAS, which splits it over a pool of threads that
spin while they wait. On this project's 2-core machine those threads take the
core from everything else the search does (the same lesson as onnxruntime's
spinning threads): in interleaved runs at load 11, the 100k vector pass took
3-11 ms with one thread against 16-22 ms with OpenBLAS's default
(docs/benchmarks.md). A product splits the rows, not the sums, so one thread
gives the same floats.

``limited()`` is a context: inside it numpy's OpenBLAS uses ``WANTED``
threads, and the count it had is put back when the last nested one leaves,
so an application's own numpy work keeps its threads (a product it runs in
another thread *during* a search gets ``WANTED`` too). ``WANTED = None``
leaves OpenBLAS alone (the library reads no environment variable: the entry
points hand values in). A numpy without OpenBLAS, or one whose library cannot
be found, is left alone. The library's functions are looked up once.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["WANTED", "limited"]

WANTED: int | None = 1  # OpenBLAS threads inside ``limited``; None: leave it as it is

_LOCK = threading.Lock()
# OpenBLAS's getter and setter under the names its builds export (numpy's
# wheels bundle scipy-openblas, 64-bit integers, with the prefixed names first).
_PREFIXES = ("scipy_openblas_", "openblas_")
_SUFFIXES = ("64_", "")
_Calls = tuple[Callable[[], int], Callable[[int], None]]
_calls: _Calls | None = None
_looked_up = False
_depth = 0
_saved = 0


@contextmanager
def limited() -> Iterator[None]:
    """numpy's OpenBLAS at ``WANTED`` threads inside (see the module)."""
    global _depth, _saved
    calls = _functions()
    wanted = WANTED
    if calls is None or wanted is None:
        yield
        return
    get, put = calls
    with _LOCK:
        if _depth == 0:
            _saved = get()
            if _saved != wanted:
                put(wanted)
        _depth += 1
    try:
        yield
    finally:
        with _LOCK:
            _depth -= 1
            if _depth == 0 and _saved != wanted:
                put(_saved)


def _functions() -> _Calls | None:
    """OpenBLAS's thread-count getter and setter, looked up once."""
    global _calls, _looked_up
    if not _looked_up:
        with _LOCK:
            if not _looked_up:
                _calls = _lookup()
                _looked_up = True
    return _calls


def _lookup() -> _Calls | None:
    import numpy  # noqa: F401 - loads its OpenBLAS

    for library in _loaded_openblas():
        try:
            handle = ctypes.CDLL(library)
        except OSError:
            continue
        for prefix in _PREFIXES:
            for suffix in _SUFFIXES:
                get = getattr(handle, f"{prefix}get_num_threads{suffix}", None)
                put = getattr(handle, f"{prefix}set_num_threads{suffix}", None)
                if get is not None and put is not None:
                    get.argtypes, get.restype = [], ctypes.c_int
                    put.argtypes, put.restype = [ctypes.c_int], None
                    return get, put
    return None


def _loaded_openblas() -> list[str]:
    """The OpenBLAS libraries mapped into this process (Linux: /proc/self/maps)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            found = {
                line.split(maxsplit=5)[-1].strip()
                for line in maps
                if "openblas" in line.lower() and ".so" in line
            }
    except OSError:
        return []
    return sorted(path for path in found if path.startswith("/"))
