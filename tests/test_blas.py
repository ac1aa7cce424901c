"""``index.blas.limited``: numpy's OpenBLAS at one thread inside the search's
products and back to the application's count after, unless the application
said to leave it alone (``blas.WANTED = None``)."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = r"""
import sys
import numpy
from memstrata.index import blas
from memstrata.index.vectors import Vectors
calls = blas._functions()
if calls is None:
    print("none")
    raise SystemExit
get, put = calls
put(2)
if sys.argv[1:] == ["leave"]:
    blas.WANTED = None
seen = []
with blas.limited():
    seen.append(get())
    with blas.limited():  # nested: still one, the outer restores
        seen.append(get())
    seen.append(get())
seen.append(get())

class Index:  # what Vectors.top reads of the index, inside the limit
    import threading
    lock = threading.Lock()
    vectors = {1: numpy.ones(4, dtype=numpy.float32).tobytes()}
    vector_log = [(1, 1)]
    chunks = {}  # (a chunk's layer is read from here; none: no layer)
    def __init__(self):
        pass

class Probe(Vectors):
    def _top(self, query, limit, layers=None):
        seen.append(get())
        return super()._top(query, limit, layers)

found = Probe().top(Index(), numpy.ones(4, dtype=numpy.float32), 1)
seen.append(get())
print(seen, [cid for cid, _ in found])
"""


def _probe(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_one_blas_thread_inside_the_search_and_the_count_restored_after() -> None:
    said = _probe()
    if said == "none":
        pytest.skip("numpy here has no OpenBLAS this can find")
    assert said == "[1, 1, 1, 2, 1, 2] [1]"


def test_left_alone_when_the_application_says_so() -> None:
    said = _probe("leave")
    if said == "none":
        pytest.skip("numpy here has no OpenBLAS this can find")
    assert said == "[2, 2, 2, 2, 2, 2] [1]"
