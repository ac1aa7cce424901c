"""One BLAS thread for numpy (issue 16's search speed).

The vector pass (``Vectors.top``) is a matrix-vector product over the whole
matrix (at 100k chunks, 26 MB of the PCA-reduced rows): memory-bound, and
numpy hands it to its OpenBLAS, which splits it over a pool of threads that
spin while they wait. On this project's 2-core machine those threads take the
core from everything else the search does (the same lesson as onnxruntime's
spinning threads): in interleaved runs at load 11, the 100k vector pass took
3-11 ms with one thread against 16-22 ms with OpenBLAS's default
(docs/benchmarks.md). A product splits the rows, not the sums, so one thread
gives the same floats.

``one_thread()`` asks numpy's OpenBLAS for one thread, once per process
(the first ``Vectors``), unless ``WANTED`` was set to None before (the
library reads no environment variable: the entry points hand values in). A
numpy without OpenBLAS, or one whose library cannot be found, is left alone.
It is process-wide: an application that wants OpenBLAS's threads for its own
numpy work sets ``memstrata.index.blas.WANTED = None`` before its first
search, or sets the count itself after it (this runs once).
"""

from __future__ import annotations

import ctypes
import threading

__all__ = ["WANTED", "one_thread"]

WANTED: int | None = 1  # OpenBLAS threads to ask for; None: leave it as it is

_DONE = threading.Event()
_LOCK = threading.Lock()
# OpenBLAS's setter under the names its builds export (numpy's wheels bundle
# scipy-openblas, 64-bit integers, with the prefixed names first).
_SETTERS = (
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)


def one_thread() -> bool:
    """Ask numpy's OpenBLAS for one thread (see the module); whether it was."""
    if _DONE.is_set():
        return False
    with _LOCK:
        if _DONE.is_set():
            return False
        _DONE.set()
        wanted = WANTED
        if wanted is None:
            return False
        import numpy  # noqa: F401 - loads its OpenBLAS

        for library in _loaded_openblas():
            try:
                handle = ctypes.CDLL(library)
            except OSError:
                continue
            for name in _SETTERS:
                setter = getattr(handle, name, None)
                if setter is not None:
                    setter.argtypes = [ctypes.c_int]
                    setter.restype = None
                    setter(wanted)
                    return True
        return False


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
