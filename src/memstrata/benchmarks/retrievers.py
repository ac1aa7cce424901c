"""memstrata itself as a LoCoMo retriever: a fresh workspace per conversation,
every utterance recorded as a transcript turn dated with its session, and
``Memory.search`` over the transcripts. No LLM anywhere; nothing from the
model-written ``observation`` / ``session_summary`` fields (``locomo.load``
never reads them)."""

from __future__ import annotations

import shutil
import tempfile
import weakref
from datetime import timedelta
from pathlib import Path

from ..index.hybrid import Weights
from ..memory import Memory
from .locomo import Conversation, Retriever

__all__ = ["memstrata_retriever", "record_conversation"]


def memstrata_retriever(
    conversation: Conversation,
    *,
    embedder: str = "minilm",
    weights: Weights | None = None,
    context_vectors: float | None = None,
) -> Retriever:
    """Index one conversation in a temporary workspace; its search function
    (``context_vectors``: the window's weight, None for the embedder's default)."""
    folder = Path(tempfile.mkdtemp(prefix="memstrata-locomo-"))
    memory = Memory.open(
        folder / "ws", embedder=embedder, session_max_turns=0, context_vectors=context_vectors
    )
    weakref.finalize(memory, shutil.rmtree, folder, True)
    dia_of = record_conversation(memory, conversation)

    def search(question: str, k: int) -> list[str]:
        hits = memory.search(question, k=k, layers=("transcripts",), weights=weights)
        found = []
        for hit in hits:
            turn_id = (hit.ref or "").partition("#")[0]
            if turn_id in dia_of:
                found.append(dia_of[turn_id])
        return found

    search.memory = memory  # type: ignore[attr-defined]  # keeps the workspace alive
    return search


def record_conversation(memory: Memory, conversation: Conversation) -> dict[str, str]:
    """Record every utterance of ``conversation`` as a dated transcript turn
    (all in one ``record_turns``: the files are what ``record_turn`` one at a
    time would write) and index it; the LoCoMo dialogue id of each turn id."""
    batch: list[dict[str, object]] = []
    dia_ids: list[str] = []
    for session in conversation.sessions:
        for offset, turn in enumerate(session.turns):
            text = (
                turn.text if not turn.caption else f"{turn.text} [shares a photo: {turn.caption}]"
            )
            batch.append(
                {
                    "session": f"{conversation.sample_id}-s{session.number}",
                    "user": text,
                    "assistant": "",
                    "meta": {"speakers": {"user": turn.speaker}, "dia_id": turn.dia_id},
                    "at": session.date + timedelta(seconds=offset),
                }
            )
            dia_ids.append(turn.dia_id)
    recorded = memory.record_turns(batch)
    dia_of = {turn.id: dia for turn, dia in zip(recorded, dia_ids, strict=True)}
    memory.reindex()
    return dia_of
