"""The fusion's vector weight for an embedder, leave-one-conversation-out on LoCoMo.

``Weights.vector`` (0.7) was tuned with MiniLM. For each conversation of
``--data`` this records every turn once (as ``memstrata bench locomo`` does),
then asks every question of categories 1-4 with each vector weight in
``VALUES`` and no relevance floor; recall@5 / @10 per conversation and
weight. Leave-one-out: the weight with the best recall@10 (then @5) on four
conversations is scored on the fifth; the mean over the five is printed with
each weight's own mean. (The recall is computed here, over the transcript
hits' dialogue ids, like ``benchmarks.locomo``; compare rows with each other.)

Run::

    .venv/bin/python bench/static_vector_weight.py --data ../shared/data/locomo/locomo_dev.json \\
        --embedder static
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from memstrata.benchmarks import locomo
from memstrata.benchmarks.locomo import OVERALL_CATEGORIES
from memstrata.benchmarks.retrievers import record_conversation
from memstrata.index.hybrid import Weights
from memstrata.memory import Memory

VALUES = (0.4, 0.55, 0.7, 0.85, 1.0, 1.2)


def recalls(
    memory: Memory, conversation: locomo.Conversation, dia_of: dict[str, str], vector: float
) -> tuple[float, float]:
    weights = Weights(vector=vector, floor_lexical=0.0, floor_vector=0.0, floor_lexical_alone=0.0)
    at5: list[float] = []
    at10: list[float] = []
    for question in conversation.questions:
        if not question.evidence or question.category not in OVERALL_CATEGORIES:
            continue
        hits = memory.search(question.text, k=20, layers=("transcripts",), weights=weights)
        turns = [(hit.ref or "").partition("#")[0] for hit in hits]
        found = list(dict.fromkeys(dia_of[turn] for turn in turns if turn in dia_of))
        wanted = set(question.evidence)
        at5.append(len(wanted.intersection(found[:5])) / len(wanted))
        at10.append(len(wanted.intersection(found[:10])) / len(wanted))
    return sum(at5) / len(at5), sum(at10) / len(at10)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--embedder", default="static")
    args = parser.parse_args()
    conversations = locomo.load(args.data)
    table: dict[float, dict[str, tuple[float, float]]] = {value: {} for value in VALUES}
    for conversation in conversations:
        folder = Path(tempfile.mkdtemp(prefix="memstrata-weight-"))
        try:
            with Memory.open(folder / "ws", embedder=args.embedder, session_max_turns=0) as memory:
                dia_of = record_conversation(memory, conversation)
                for value in VALUES:
                    table[value][conversation.sample_id] = recalls(
                        memory, conversation, dia_of, value
                    )
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    ids = [conversation.sample_id for conversation in conversations]
    held_out: list[tuple[float, float]] = []
    for held in ids:
        rest = [i for i in ids if i != held]
        best = max(
            VALUES,
            key=lambda v: (sum(table[v][i][1] for i in rest), sum(table[v][i][0] for i in rest)),
        )
        held_out.append(table[best][held])
        print(f"{held}: chose {best}")
    n = len(ids)
    cv5, cv10 = sum(r[0] for r in held_out) / n, sum(r[1] for r in held_out) / n
    print(f"leave-one-out: recall@5 {cv5:.4f}, @10 {cv10:.4f}")
    for value in VALUES:
        mean5 = sum(table[value][i][0] for i in ids) / n
        mean10 = sum(table[value][i][1] for i in ids) / n
        print(f"vector {value}: recall@5 {mean5:.4f}, @10 {mean10:.4f}")


if __name__ == "__main__":
    main()
