"""Contextual vectors (issue 16, ``index.windows``): a transcript turn's stored
vector mixes its own embedding with its window's (previous + turn + next), and
the turn before a new one is embedded again when its window gains a next."""

from __future__ import annotations

import numpy as np
import pytest

from fakes import RecordingEmbedder
from memstrata import Memory
from memstrata.errors import InvalidInput
from memstrata.index import windows


def _stored(memory: Memory) -> dict[str, np.ndarray]:
    """Each transcript chunk's body -> its stored vector (after a sync)."""
    memory.search("anything")
    index = memory._search._searcher().index  # noqa: SLF001 - the test reads the index
    return {
        index.chunks[cid].body: np.frombuffer(vec, dtype=np.float32)
        for cid, vec in index.vectors.items()
        if index.chunks[cid].layer == "transcripts"
    }


def _mixed(model: RecordingEmbedder, own: str, window: str, weight: float) -> np.ndarray:
    return (1 - weight) * model.vector(own) + weight * model.vector(window)


def test_a_turn_is_stored_mixed_with_its_window(tmp_path):
    model = RecordingEmbedder()
    with Memory.open(tmp_path / "ws", embedder=model, context_vectors=0.6) as memory:
        memory.record_turn("s1", user="I adopted a dog last week", assistant="What is its name?")
        memory.record_turn("s1", user="Rex, a golden retriever", assistant="Lovely name.")
        stored = _stored(memory)
        index = memory._search._searcher().index  # noqa: SLF001
        assert index.vector_model == "recording+window:0.6"
    bodies = list(stored)
    assert len(bodies) == 4  # user and assistant messages of two turns
    first, second, third, fourth = bodies
    # the middle message: the one before, itself, the one after, as one text
    window = f"{second}\n{third}\n{fourth}"
    assert window in model.seen
    np.testing.assert_allclose(stored[third], _mixed(model, third, window, 0.6), atol=1e-6)
    # the first has no message before it: itself and the next
    np.testing.assert_allclose(
        stored[first], _mixed(model, first, f"{first}\n{second}", 0.6), atol=1e-6
    )
    # the newest has no next yet: its own vector, its window not embedded
    np.testing.assert_allclose(stored[fourth], model.vector(fourth), atol=1e-6)
    assert f"{third}\n{fourth}" not in model.seen
    for vector in stored.values():  # a mix of unit vectors: never longer than 1
        assert float(np.linalg.norm(vector)) <= 1.0 + 1e-6


def test_the_last_turn_waits_for_the_next_one_then_is_embedded_again(tmp_path):
    model = RecordingEmbedder()
    with Memory.open(tmp_path / "ws", embedder=model, context_vectors=0.6) as memory:
        memory.record_turn("s1", user="We moved the launch", assistant="To when?")
        last = _stored(memory)["To when?"]
        np.testing.assert_allclose(last, model.vector("To when?"), atol=1e-6)
        memory.record_turn("s1", user="To the 14th of March", assistant="Noted.")
        again = _stored(memory)["To when?"]
    window = "We moved the launch\nTo when?\nTo the 14th of March"
    np.testing.assert_allclose(again, _mixed(model, "To when?", window, 0.6), atol=1e-6)
    # one window a message: none was embedded without its next message
    said = ("launch", "To when?", "March", "Noted.")
    made = [t for t in model.seen if "\n" in t and "**" not in t and any(w in t for w in said)]
    assert made == [
        "We moved the launch\nTo when?",
        window,
        "To when?\nTo the 14th of March\nNoted.",
    ]


def test_a_synced_turn_and_a_batch_store_the_same_vectors(tmp_path):
    said = [("s1", "a dog", "its name?"), ("s1", "Rex", "nice"), ("s2", "new topic", "ok")]
    with Memory.open(tmp_path / "each", embedder=RecordingEmbedder(), context_vectors=0.6) as m:
        for session, user, assistant in said:
            m.record_turn(session, user=user, assistant=assistant)
            one_by_one = _stored(m)
    with Memory.open(tmp_path / "all", embedder=RecordingEmbedder(), context_vectors=0.6) as m:
        for session, user, assistant in said:
            m.record_turn(session, user=user, assistant=assistant)
        at_once = _stored(m)
    assert one_by_one.keys() == at_once.keys()
    for body, vector in at_once.items():
        np.testing.assert_allclose(one_by_one[body], vector, atol=1e-6)


def test_windows_stay_inside_a_session_and_cut_long_neighbours(tmp_path):
    model = RecordingEmbedder()
    long_result = "x" * 5000
    with Memory.open(tmp_path / "ws", embedder=model, context_vectors=0.6) as memory:
        memory.record_turn("alpha", user="alpha one", assistant=long_result)
        memory.record_turn("beta", user="beta one", assistant="beta two")
        stored = _stored(memory)
    assert "alpha one\n" + long_result[: windows.NEIGHBOUR_CHARS] in model.seen
    assert not any("alpha" in text and "beta" in text for text in model.seen)
    np.testing.assert_allclose(
        stored["beta one"], _mixed(model, "beta one", "beta one\nbeta two", 0.6), atol=1e-6
    )


def test_weight_zero_stores_each_turn_alone(tmp_path):
    model = RecordingEmbedder()
    with Memory.open(tmp_path / "ws", embedder=model, context_vectors=0) as memory:
        memory.record_turn("s1", user="first said", assistant="second said")
        stored = _stored(memory)
        assert memory._search._searcher().index.vector_model == "recording"  # noqa: SLF001
    assert "first said\nsecond said" not in model.seen
    np.testing.assert_allclose(stored["first said"], model.vector("first said"), atol=1e-6)


def test_changing_the_weight_embeds_the_index_again(tmp_path):
    ws = tmp_path / "ws"
    with Memory.open(ws, embedder=RecordingEmbedder(), context_vectors=0) as memory:
        memory.record_turn("s1", user="one", assistant="two")
        plain = _stored(memory)
    model = RecordingEmbedder()
    with Memory.open(ws, embedder=model, context_vectors=0.5) as memory:
        mixed = _stored(memory)
    assert "one\ntwo" in model.seen
    np.testing.assert_allclose(mixed["one"], _mixed(model, "one", "one\ntwo", 0.5), atol=1e-6)
    assert not np.allclose(mixed["one"], plain["one"])


@pytest.mark.parametrize("bad", [-0.1, 1.5, "high", True])
def test_the_weight_is_checked(tmp_path, bad):
    with pytest.raises(InvalidInput, match="context_vectors"):
        Memory.open(tmp_path / "ws", embedder="hash", context_vectors=bad)


def test_the_weight_measured_for_each_embedder(tmp_path):
    assert windows.weight_for(None, "minilm") == 0.6  # LoCoMo leave-one-out
    assert windows.weight_for(None, " MiniLM ") == 0.6  # as load_embedder reads the name
    assert windows.weight_for(None, "static") == 0.0  # lost recall at 0.6
    assert windows.weight_for(None, RecordingEmbedder()) == 0.0  # not measured: none
    assert windows.weight_for(0.3, "static") == 0.3
    assert windows.weight_for(0, "minilm") == 0.0
    model = RecordingEmbedder()
    with Memory.open(tmp_path / "ws", embedder=model) as memory:  # no setting: none
        memory.record_turn("s1", user="one", assistant="two")
        memory.search("one")
    assert "one\ntwo" not in model.seen


def test_the_status_names_the_weight(tmp_path):
    with Memory.open(tmp_path / "a", embedder=RecordingEmbedder(), context_vectors=0.6) as memory:
        assert memory.index_status()["context_vectors"] == 0.6
    with Memory.open(tmp_path / "b", embedder="none", context_vectors=0.6) as memory:
        assert memory.index_status()["context_vectors"] == 0.0  # no vectors at all


def test_model_name():
    assert windows.model_name("minilm", 0) == "minilm"
    assert windows.model_name("minilm", 0.6) == "minilm+window:0.6"
