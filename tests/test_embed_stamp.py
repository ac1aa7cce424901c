"""The default embedding model's integrity check made cheap (issue 18): a
check that passed leaves a stamp (the file's device, inode, size, mtime_ns
and the pinned hash) in the cache folder, and a later load of the same file
skips the SHA-256; a missing, damaged or stale stamp, or a changed pin, is
hashed again, and a wrong file is still refused."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memstrata.embed import onnx as embed_onnx
from memstrata.errors import BackendUnavailable

BIG = 1 << 20  # the model is ~23 MB; stamps and names are tiny


@pytest.fixture
def model() -> Path:
    return embed_onnx.default_model_path()


@pytest.fixture
def hashes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the big inputs hashed; the cache folder a fresh one."""
    monkeypatch.setattr(embed_onnx, "_stamps", tmp_path / "cache")
    seen: list[int] = []
    real: Callable[..., Any] = hashlib.sha256

    def counting(data: bytes = b"", **kwargs: Any) -> Any:
        if len(data) > BIG:
            seen.append(len(data))
        return real(data, **kwargs)

    monkeypatch.setattr(embed_onnx.hashlib, "sha256", counting)
    return seen


def _stamps(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache").glob("model-*.json"))


def test_a_verified_model_is_hashed_once(model: Path, hashes: list[int], tmp_path: Path) -> None:
    data = embed_onnx._verified_model(model)
    assert len(hashes) == 1 and len(_stamps(tmp_path)) == 1
    assert embed_onnx._verified_model(model) == data  # the same bytes, no hash
    assert len(hashes) == 1


@pytest.mark.parametrize(
    "damage",
    [
        lambda stamp: stamp.write_text("{not json"),
        lambda stamp: stamp.write_bytes(b""),
        lambda stamp: stamp.write_text(json.dumps({"key": [0, 0, 0, 0], "sha256": "x"})),
        lambda stamp: stamp.write_text("[" * 100_000),
        lambda stamp: stamp.unlink(),
    ],
)
def test_a_damaged_or_stale_stamp_means_hashing_again(
    model: Path, hashes: list[int], tmp_path: Path, damage: Callable[[Path], Any]
) -> None:
    embed_onnx._verified_model(model)
    damage(_stamps(tmp_path)[0])
    embed_onnx._verified_model(model)
    assert len(hashes) == 2
    embed_onnx._verified_model(model)  # stamped again
    assert len(hashes) == 2


def test_a_changed_pin_or_file_is_checked_again(
    model: Path, hashes: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embed_onnx._verified_model(model)  # stamped
    pinned = embed_onnx.DEFAULT_MODEL_SHA256
    monkeypatch.setattr(embed_onnx, "DEFAULT_MODEL_SHA256", "0" * 64)
    with pytest.raises(BackendUnavailable, match="wrong SHA-256"):
        embed_onnx._verified_model(model)
    monkeypatch.setattr(embed_onnx, "DEFAULT_MODEL_SHA256", pinned)
    copy = tmp_path / "model.onnx"
    copy.write_bytes(model.read_bytes())
    embed_onnx._verified_model(copy)
    before = len(hashes)
    os.utime(copy, ns=(1, 1))  # the same path, another mtime: not the file stamped
    embed_onnx._verified_model(copy)
    assert len(hashes) == before + 1
    embed_onnx._verified_model(copy)
    assert len(hashes) == before + 1
    tampered = bytearray(copy.read_bytes())
    tampered[-1] ^= 1
    copy.write_bytes(bytes(tampered))
    with pytest.raises(BackendUnavailable, match="wrong SHA-256"):
        embed_onnx._verified_model(copy)


def test_without_a_cache_folder_every_load_hashes(
    model: Path, hashes: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embed_onnx, "_stamps", None)
    embed_onnx._verified_model(model)
    embed_onnx._verified_model(model)
    assert len(hashes) == 2
