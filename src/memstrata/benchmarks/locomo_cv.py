"""The relevance floor, calibrated and checked by leave-one-conversation-out
cross-validation on LoCoMo (``memstrata bench locomo --cv``).

For each conversation: every question (with its recall@k, its session hit
and its ``Relevance``) and each of the 200 ``UNRELATED`` queries (its
``Relevance``) are searched once with the floor off. A floor (lexical,
vector) is then chosen on four conversations — the highest recall@10 (then
@5) whose false hits (unrelated queries that return anything) stay at most
``MAX_FALSE_HITS`` — and measured on the fifth; the figures are averaged
over the five folds. A question whose search the floor empties scores 0.

Guarantees: nothing is tuned on the conversation it is measured on; the
report keeps the figures without a floor beside the cross-validated ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..index.hybrid import Weights
from ..index.relevance import RELEVANCE, Relevance
from .locomo import DEFAULT_KS, OVERALL_CATEGORIES, Conversation, session_hit
from .unrelated import UNRELATED

__all__ = ["MAX_FALSE_HITS", "Observed", "choose", "collect", "cross_validate", "figures"]

MAX_FALSE_HITS = 0.05
_OFF = 0.0
LEXICAL_FLOORS = (_OFF, *(round(0.02 * n, 2) for n in range(1, 50)))
VECTOR_FLOORS = (_OFF, *(round(0.02 * n, 2) for n in range(5, 45)))


@dataclass(frozen=True)
class Asked:
    """One question: its category, recall at each of ``DEFAULT_KS``, whether
    an evidence session was among the first five, and its relevance."""

    category: int
    recalls: tuple[float, ...]
    session: float
    relevance: Relevance


@dataclass(frozen=True)
class Observed:
    """One conversation's questions and unrelated queries, searched without a floor."""

    sample_id: str
    asked: tuple[Asked, ...]
    unrelated: tuple[Relevance, ...]


def collect(
    conversations: Iterable[Conversation], embedder: str, context_vectors: float | None = None
) -> list[Observed]:
    """Search every question and unrelated query of each conversation once
    (``context_vectors``: the window's weight, None for the embedder's default)."""
    from .retrievers import memstrata_retriever

    off = Weights(floor_lexical=0.0, floor_vector=0.0, floor_lexical_alone=0.0)
    out = []
    for conversation in conversations:
        search = memstrata_retriever(
            conversation, embedder=embedder, weights=off, context_vectors=context_vectors
        )
        asked = []
        for question in conversation.questions:
            if not question.evidence:
                continue
            found = list(dict.fromkeys(search(question.text, max(DEFAULT_KS))))
            wanted = set(question.evidence)
            recalls = tuple(len(wanted.intersection(found[:k])) / len(wanted) for k in DEFAULT_KS)
            asked.append(
                Asked(question.category, recalls, session_hit(question.evidence, found), _last())
            )
        unrelated = []
        for query in UNRELATED:
            search(query, 10)
            unrelated.append(_last())
        out.append(Observed(conversation.sample_id, tuple(asked), tuple(unrelated)))
    return out


def _last() -> Relevance:
    found = RELEVANCE.get()
    return found if found is not None else Relevance(0.0, 0.0)


def figures(observed: Sequence[Observed], floor: tuple[float, float]) -> dict[str, float]:
    """Recall@k (categories 1-4), session_recall@5 (1-5) and the share of
    unrelated queries that return anything, with this floor."""
    scored = [a for o in observed for a in o.asked if a.category in OVERALL_CATEGORIES]
    every = [a for o in observed for a in o.asked]
    unrelated = [r for o in observed for r in o.unrelated]
    out = {
        f"recall@{k}": _mean(a.recalls[i] * _shown(a.relevance, floor) for a in scored)
        for i, k in enumerate(DEFAULT_KS)
    }
    out["session_recall@5"] = _mean(a.session * _shown(a.relevance, floor) for a in every)
    out["false_hits"] = _mean(_shown(r, floor) for r in unrelated)
    return out


def _shown(found: Relevance, floor: tuple[float, float]) -> float:
    """1.0 when a search with this relevance returns anything under ``floor``."""
    return float((found.lexical > 0 or found.vector > 0) and found.passes(*floor))


def _mean(values: Iterable[float]) -> float:
    items = list(values)
    return round(sum(items) / len(items), 4) if items else 0.0


def choose(observed: Sequence[Observed]) -> tuple[float, float]:
    """The floor with the best recall@10 (then @5, session_recall@5, fewest
    false hits) on ``observed`` whose false hits are at most ``MAX_FALSE_HITS``;
    on a tie the lowest (the most lenient on queries unlike LoCoMo's)."""
    best: tuple[tuple[float, ...], tuple[float, float]] | None = None
    for lexical in LEXICAL_FLOORS:
        for vector in VECTOR_FLOORS:
            if lexical == _OFF and vector == _OFF:
                continue  # no floor at all
            seen = figures(observed, (lexical, vector))
            if seen["false_hits"] > MAX_FALSE_HITS:
                continue
            key = (
                seen["recall@10"],
                seen["recall@5"],
                seen["session_recall@5"],
                -seen["false_hits"],
                -lexical,
                -vector,
            )
            if best is None or key > best[0]:
                best = (key, (lexical, vector))
    return best[1] if best is not None else (1.0, 1.0)


def cross_validate(observed: Sequence[Observed]) -> dict[str, Any]:
    """Leave-one-conversation-out: each fold's floor chosen on the others."""
    folds: list[dict[str, Any]] = []
    for held in range(len(observed)):
        train = [o for i, o in enumerate(observed) if i != held]
        floor = choose(train) if train else choose(observed)
        folds.append(
            {
                "conversation": observed[held].sample_id,
                "floor": {"lexical": floor[0], "vector": floor[1]},
                **figures([observed[held]], floor),
            }
        )
    keys = [key for key in folds[0] if key not in ("conversation", "floor")] if folds else []
    chosen = choose(observed)
    return {
        "without_floor": figures(observed, (0.0, 0.0)),
        "cross_validated": {key: _mean(float(f[key]) for f in folds) for key in keys},
        "folds": folds,
        "floor_on_all": {"lexical": chosen[0], "vector": chosen[1], **figures(observed, chosen)},
        "unrelated_queries": len(UNRELATED),
        "max_false_hits": MAX_FALSE_HITS,
    }
