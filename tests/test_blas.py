"""``index.blas.one_thread``: numpy's OpenBLAS asked for one thread once, unless
the process chose a number itself."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROBE = r"""
import ctypes
from memstrata.index import blas
import numpy
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
CHOICES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MEMSTRATA_BLAS_THREADS")


def _probe(**chosen: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in CHOICES} | chosen
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_one_blas_thread_unless_the_process_chose() -> None:
    said = _probe()
    if said.endswith("[]"):
        pytest.skip("numpy here has no OpenBLAS this can find")
    assert said == "True False [1]"
    assert _probe(OPENBLAS_NUM_THREADS="2") == "False False [2]"
    assert _probe(MEMSTRATA_BLAS_THREADS="0").startswith("False False")
