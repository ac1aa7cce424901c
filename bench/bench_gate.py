"""The prompt's fact gate (``context.ranking.FactRanker``) on LoCoMo: recall@k.

Each conversation's utterances become long-term facts (``"{speaker}: {text}"``
plus an image caption), each question is a prompt, and the gate's top k facts
are scored against the question's evidence turns with the LoCoMo scorer
(``memstrata.benchmarks.locomo.evaluate``). This is what decides which facts a
gated ``build_context`` shows; no embedding, no index file.

Run::

    .venv/bin/python bench/bench_gate.py --data ../shared/data/locomo/locomo_dev.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from memstrata.benchmarks.locomo import Conversation, Retriever, evaluate, load
from memstrata.context.ranking import FactRanker
from memstrata.model import Item


def gate_retriever(conversation: Conversation) -> Retriever:
    """A FactRanker over the conversation's turns; its top-k as dialogue ids."""
    at = datetime(2026, 1, 1, tzinfo=UTC)
    items: dict[str, Item] = {}
    for number, turn in enumerate(conversation.turns()):
        text = f"{turn.speaker}: {turn.text}" + (f" {turn.caption}" if turn.caption else "")
        item_id = f"m{number:08d}"
        items[item_id] = Item(id=item_id, text=text, category="fact", created_at=at, updated_at=at)
    dia_of = {f"m{n:08d}": turn.dia_id for n, turn in enumerate(conversation.turns())}
    gate = FactRanker()
    gate.sync(items, generation=1, changes=[])

    def search(query: str, k: int) -> list[str]:
        return [dia_of[item_id] for item_id in gate.top(query, k)]

    return search


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    began = time.perf_counter()
    report = evaluate(load(args.data), gate_retriever).as_json()
    report["seconds"] = round(time.perf_counter() - began, 1)
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
