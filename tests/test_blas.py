"""``index.blas.one_thread``: numpy's OpenBLAS asked for one thread once, unless
the application said to leave it alone (``blas.WANTED = None``)."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = r"""
import ctypes, sys
from memstrata.index import blas
import numpy
if sys.argv[1:] == ["leave"]:
    blas.WANTED = None
first = blas.one_thread()
again = blas.one_thread()
counts = []
for library in blas._loaded_openblas():
    handle = ctypes.CDLL(library)
    for name in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads"):
        getter = getattr(handle, name, None)
        if getter is not None:
            counts.append(getter())
            break
print(first, again, counts)
"""


def _probe(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_one_blas_thread_unless_the_application_says_not_to() -> None:
    said = _probe()
    if said.endswith("[]"):
        pytest.skip("numpy here has no OpenBLAS this can find")
    assert said == "True False [1]"
    assert _probe("leave").startswith("False False")
