"""The ``Volume`` contract (``test_volume_contract``) run on ``DictVolume``
(``tests/fakes_volume.py``), the in-RAM volume the store tests use to show
that a store reads and writes only through its workspace's volume."""

from __future__ import annotations

import pytest
import test_volume_contract as contract

from fakes_volume import DictVolume

# Every test of the contract, on this module's ``volume``.
globals().update({name: test for name, test in vars(contract).items() if name.startswith("test_")})


@pytest.fixture
def volume() -> DictVolume:
    return DictVolume()


def test_every_contract_test_runs_here() -> None:
    assert any(name.startswith("test_") for name in vars(contract))
    assert all(name in globals() for name in vars(contract) if name.startswith("test_"))
