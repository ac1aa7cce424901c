"""LoCoMo retrieval benchmark: recall@k of a pluggable retriever over dialogue turns.

LoCoMo (Maharana et al., ACL 2024; CC BY-NC 4.0, never copied into this project) holds
long two-person conversations split into dated sessions, and questions whose
``evidence`` names the turns (``dia_id`` such as ``"D3:12"``) that answer them.

Guarantees:

* ``load`` reads only the dialogue (speakers, dated sessions, turns, image captions)
  and the questions; the model-generated ``observation``, ``session_summary`` and
  ``event_summary`` are never read, as the benchmark rules require.
* Evidence ids are repaired once, by ``repair_evidence``: every id a ``Question``
  holds has the canonical form ``D<int>:<int>`` (no leading zeros), without repeats.
* ``evaluate`` gives each conversation its own retriever (``make_retriever`` is
  called once per conversation) and scores only what that retriever returns; it
  times every search call. Category 5 (adversarial) is reported per category but
  kept out of ``overall``.

Run::

    .venv/bin/python -m memstrata.benchmarks.locomo --data ../shared/data/locomo/locomo_dev.json
"""

from __future__ import annotations

import argparse
import json
import math
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import InvalidInput

__all__ = [
    "ADVERSARIAL",
    "Conversation",
    "DialogTurn",
    "MakeRetriever",
    "Question",
    "Report",
    "Retriever",
    "Session",
    "bm25_retriever",
    "evaluate",
    "limit_questions",
    "load",
    "main",
    "parse_session_date",
    "repair_evidence",
    "session_hit",
    "session_of",
]

ADVERSARIAL = 5
"""The category of questions the conversation cannot answer; not part of ``overall``."""

OVERALL_CATEGORIES = frozenset({1, 2, 3, 4})
"""Multi-hop, temporal, open-domain, single-hop: the categories ``overall`` averages."""

DEFAULT_KS = (1, 5, 10, 20)

SESSION_K = 5
"""Distinct sessions the session-level figure looks at (``session_recall@5``)."""

Retriever = Callable[[str, int], list[str]]
"""``search(question_text, k)``: up to ``k`` dia_ids, best first."""

MakeRetriever = Callable[["Conversation"], Retriever]
"""Builds a fresh index over one conversation and returns its search function."""


@dataclass(frozen=True)
class DialogTurn:
    """One utterance; ``caption`` describes the image shared with it, if any."""

    dia_id: str
    speaker: str
    text: str
    caption: str | None = None


@dataclass(frozen=True)
class Session:
    """A dated stretch of the conversation; ``date`` is timezone-aware UTC."""

    number: int
    date: datetime
    turns: tuple[DialogTurn, ...]


@dataclass(frozen=True)
class Question:
    """A question, its reference answer and the (repaired) ids of its evidence turns."""

    text: str
    answer: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Conversation:
    """One LoCoMo sample: sessions in order of their number, and its questions."""

    sample_id: str
    speakers: tuple[str, str]
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]

    def turns(self) -> Iterable[DialogTurn]:
        """Every turn, session by session, in dialogue order."""
        for session in self.sessions:
            yield from session.turns


# --- loading -------------------------------------------------------------------------

_SESSION_KEY = re.compile(r"session_(\d+)")
_SESSION_DATE = re.compile(
    r"\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([a-z]+),?\s+(\d{4})\s*",
    re.IGNORECASE,
)
_MONTHS = {
    name: number
    for number, name in enumerate(
        (
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ),
        start=1,
    )
}


def load(path: Path | str) -> list[Conversation]:
    """The conversations of a LoCoMo JSON file, in file order.

    Only ``sample_id``, ``conversation`` (speakers, ``session_N`` turns and their
    ``session_N_date_time``) and ``qa`` are read. ``observation``, ``session_summary``
    and ``event_summary`` are model-generated and the benchmark rules forbid using
    them: they are ignored, never parsed into any field. Sessions are sorted by their
    number (``session_10`` after ``session_9``). Raises ``InvalidInput`` on a file
    that does not have this shape.
    """
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(raw, list):
        raise InvalidInput(f"{path}: expected a list of LoCoMo samples")
    return [_conversation(sample) for sample in raw]


def _conversation(sample: dict[str, Any]) -> Conversation:
    try:
        dialogue = sample["conversation"]
        sample_id = str(sample["sample_id"])
        speakers = (str(dialogue["speaker_a"]), str(dialogue["speaker_b"]))
        qa = sample["qa"]
    except (KeyError, TypeError) as exc:
        raise InvalidInput(f"LoCoMo sample without {exc}") from exc
    numbers = sorted(int(match[1]) for key in dialogue if (match := _SESSION_KEY.fullmatch(key)))
    sessions = tuple(_session(sample_id, dialogue, number) for number in numbers)
    return Conversation(sample_id, speakers, sessions, tuple(_question(item) for item in qa))


def _session(sample_id: str, dialogue: dict[str, Any], number: int) -> Session:
    when = dialogue.get(f"session_{number}_date_time")
    if not isinstance(when, str):
        raise InvalidInput(f"{sample_id}: session_{number} has no session_{number}_date_time")
    turns = tuple(_turn(turn) for turn in dialogue[f"session_{number}"])
    return Session(number, parse_session_date(when), turns)


def _turn(turn: dict[str, Any]) -> DialogTurn:
    dia_id = str(turn["dia_id"])
    canonical = _canonical_id(dia_id)
    caption = turn.get("blip_caption")
    return DialogTurn(
        dia_id=canonical or dia_id,
        speaker=str(turn["speaker"]),
        text=str(turn["text"]),
        caption=str(caption) if caption else None,
    )


def _question(item: dict[str, Any]) -> Question:
    answer = item.get("answer", item.get("adversarial_answer", ""))
    evidence = item.get("evidence") or []
    return Question(
        text=str(item["question"]),
        answer=str(answer),
        category=int(item["category"]),
        evidence=repair_evidence(str(entry) for entry in evidence),
    )


def parse_session_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` as an aware UTC datetime (the file gives no zone).

    Independent of the locale; raises ``InvalidInput`` on any other shape.
    """
    match = _SESSION_DATE.fullmatch(text)
    month = _MONTHS.get(match[5].lower()) if match else None
    if match is None or month is None:
        raise InvalidInput(f"unrecognised LoCoMo session date: {text!r}")
    hour = int(match[1]) % 12 + (12 if match[3].lower() == "p" else 0)
    try:
        return datetime(int(match[6]), month, int(match[4]), hour, int(match[2]), tzinfo=UTC)
    except ValueError as exc:
        raise InvalidInput(f"impossible LoCoMo session date: {text!r}") from exc


# --- evidence ids --------------------------------------------------------------------

_ID = re.compile(r"D:?(\d+):(\d+)", re.IGNORECASE)
_SPACED_COLON = re.compile(r"\s*:\s*")
_SPACED_D = re.compile(r"\b([dD])\s+(?=\d)")
_SEPARATORS = re.compile(r"[;,\s]+")


def repair_evidence(raw: Iterable[str]) -> tuple[str, ...]:
    """Canonical, distinct dia_ids from LoCoMo's hand-written evidence strings.

    Each string may hold several ids separated by ``;``, ``,`` or whitespace
    (``"D8:6; D9:17"``). Each id is normalised: case, spaces around the colon and
    leading zeros go (``"d8 : 6"`` and ``"D08:06"`` -> ``"D8:6"``), as does a stray
    colon after the ``D`` (``"D:11:26"`` -> ``"D11:26"``). Anything else that is
    not ``D<int>:<int>`` (``"D"``, ``"D8"``, ``"8:6"``) is dropped. The result keeps
    the first occurrence of each id, in input order.
    """
    seen: dict[str, None] = {}
    for entry in raw:
        tight = _SPACED_D.sub(r"\1", _SPACED_COLON.sub(":", entry))
        for token in _SEPARATORS.split(tight):
            canonical = _canonical_id(token)
            if canonical is not None:
                seen.setdefault(canonical, None)
    return tuple(seen)


def _canonical_id(token: str) -> str | None:
    """``"D<session>:<turn>"`` without leading zeros, or None if ``token`` is no id."""
    match = _ID.fullmatch(token)
    return f"D{int(match[1])}:{int(match[2])}" if match else None


def limit_questions(conversations: Iterable[Conversation], n: int) -> list[Conversation]:
    """The conversations with only their first ``n`` questions each (for quick runs)."""
    if n < 0:
        raise InvalidInput(f"question limit must be >= 0, not {n}")
    return [replace(conv, questions=conv.questions[:n]) for conv in conversations]


# --- scoring -------------------------------------------------------------------------


@dataclass(frozen=True)
class Report:
    """Recall@k and search latency of one retriever; ``as_json`` is the report format.

    ``overall`` averages the questions of categories 1-4 (``questions`` of them);
    ``by_category`` has every category with at least one scored question, adversarial
    included, each with its ``"questions"`` count. ``skipped`` counts questions (of any
    category) without a valid evidence id. Recalls are 0.0 when nothing was scored.
    ``session_recall`` is the session-level figure over categories 1-5: a question
    counts as found when any of its evidence sessions is among the first
    ``SESSION_K`` distinct sessions of what was retrieved.
    """

    overall: dict[str, float]
    by_category: dict[str, dict[str, float | int]]
    latency_ms: dict[str, float]
    questions: int
    skipped: int
    session_recall: float = 0.0

    def as_json(self) -> dict[str, Any]:
        """The report as plain JSON-ready data, with the documented keys in order."""
        return {
            "overall": dict(self.overall),
            "by_category": {key: dict(value) for key, value in self.by_category.items()},
            "latency_ms": dict(self.latency_ms),
            "questions": self.questions,
            "skipped": self.skipped,
            f"session_recall@{SESSION_K}": self.session_recall,
        }


def evaluate(
    conversations: Iterable[Conversation],
    make_retriever: MakeRetriever,
    ks: Sequence[int] = DEFAULT_KS,
) -> Report:
    """Score ``make_retriever`` on every question that has a valid evidence id.

    ``make_retriever`` is called once per conversation; its search function is asked
    for ``max(ks)`` ids per question. The returned ids are deduplicated (first
    occurrence wins) before ranking, so recall@k = |evidence ∩ top-k| / |evidence|
    never exceeds 1. Every search call is timed with ``perf_counter``; latency is the
    p50/p95 over all of them, in milliseconds. Numbers are rounded to 4 decimals.
    """
    cutoffs = _checked_ks(ks)
    per_category: dict[int, list[list[float]]] = defaultdict(list)
    latencies: list[float] = []
    sessions_found: list[float] = []
    skipped = 0
    for conversation in conversations:
        search = make_retriever(conversation)
        for question in conversation.questions:
            if not question.evidence:
                skipped += 1
                continue
            start = time.perf_counter()
            found = search(question.text, cutoffs[-1])
            latencies.append((time.perf_counter() - start) * 1000.0)
            per_category[question.category].append(_recalls(question.evidence, found, cutoffs))
            sessions_found.append(session_hit(question.evidence, found))
    scored = [
        row
        for category, rows in per_category.items()
        if category in OVERALL_CATEGORIES
        for row in rows
    ]
    return Report(
        overall=_mean_recalls(scored, cutoffs),
        by_category={
            str(category): {**_mean_recalls(rows, cutoffs), "questions": len(rows)}
            for category, rows in sorted(per_category.items())
        },
        latency_ms={
            "p50": round(_percentile(latencies, 50), 4),
            "p95": round(_percentile(latencies, 95), 4),
        },
        questions=len(scored),
        skipped=skipped,
        session_recall=round(sum(sessions_found) / len(sessions_found), 4)
        if sessions_found
        else 0.0,
    )


def session_of(dia_id: str) -> str:
    """The session of a dialogue id: ``"D3:12"`` -> ``"D3"``."""
    return dia_id.partition(":")[0]


def session_hit(evidence: Iterable[str], found: Iterable[str], k: int = SESSION_K) -> float:
    """1.0 when a session of ``evidence`` is among the first ``k`` distinct
    sessions of ``found`` (best first), else 0.0."""
    first = list(dict.fromkeys(session_of(dia_id) for dia_id in found))[:k]
    return 1.0 if {session_of(dia_id) for dia_id in evidence} & set(first) else 0.0


def _checked_ks(ks: Sequence[int]) -> tuple[int, ...]:
    """The distinct cut-offs in ascending order; ``InvalidInput`` unless all are >= 1."""
    ordered = tuple(sorted(set(ks)))
    if not ordered or ordered[0] < 1:
        raise InvalidInput(f"ks must be positive cut-offs, not {tuple(ks)}")
    return ordered


def _recalls(evidence: tuple[str, ...], found: Iterable[str], ks: tuple[int, ...]) -> list[float]:
    """Recall at each cut-off of ``ks`` for one question (``found`` deduplicated first)."""
    ranked = list(dict.fromkeys(found))
    wanted = set(evidence)
    return [len(wanted.intersection(ranked[:k])) / len(wanted) for k in ks]


def _mean_recalls(rows: list[list[float]], ks: tuple[int, ...]) -> dict[str, float]:
    """The mean of each recall column, rounded; 0.0 for every cut-off when ``rows`` is empty."""
    return {
        f"recall@{k}": round(sum(row[i] for row in rows) / len(rows), 4) if rows else 0.0
        for i, k in enumerate(ks)
    }


def _percentile(values: list[float], pct: float) -> float:
    """Linear-interpolation percentile (numpy's default); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = (len(ordered) - 1) * pct / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


# --- BM25 baseline -------------------------------------------------------------------

_TOKEN = re.compile(r"\w+")
_STOPWORD_TEXT = """
a an and are as at be been but by did do does for from had has have he her his how i if in is it
its me my of on or our she so that the their them they this to was we were what when where which
who whom why will with would you your
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def _tokens(text: str) -> list[str]:
    return [token for token in _TOKEN.findall(text.lower()) if token not in _STOPWORDS]


def bm25_retriever(conversation: Conversation, k1: float = 1.2, b: float = 0.75) -> Retriever:
    """A plain in-memory BM25 over the turns of ``conversation`` (a baseline, not the product).

    A turn's text is ``"{speaker}: {text}"`` plus its image caption; tokens are the
    lowercased ``\\w+`` runs minus a small English stopword list; idf is
    ``ln(1 + (N - df + 0.5) / (df + 0.5))``. Search returns only turns sharing a term
    with the question, best first, ties in dialogue order. Standard library only.
    """
    turns = list(conversation.turns())
    ids = [turn.dia_id for turn in turns]
    postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
    lengths: list[int] = []
    for index, turn in enumerate(turns):
        text = f"{turn.speaker}: {turn.text}" + (f" {turn.caption}" if turn.caption else "")
        counts = Counter(_tokens(text))
        lengths.append(sum(counts.values()))
        for term, tf in counts.items():
            postings[term].append((index, tf))
    total = len(turns)
    average = sum(lengths) / total if total else 0.0
    norms = [k1 * (1 - b + b * length / average) if average else k1 for length in lengths]
    idf = {
        term: math.log(1 + (total - len(hits) + 0.5) / (len(hits) + 0.5))
        for term, hits in postings.items()
    }

    def search(query: str, k: int) -> list[str]:
        scores: dict[int, float] = defaultdict(float)
        for term in set(_tokens(query)):
            weight = idf.get(term)
            if weight is None:
                continue
            for index, tf in postings[term]:
                scores[index] += weight * tf * (k1 + 1) / (tf + norms[index])
        best = sorted(scores.items(), key=lambda hit: (-hit[1], hit[0]))[: max(k, 0)]
        return [ids[index] for index, _ in best]

    return search


def _memstrata(conversation: Conversation) -> Retriever:
    from .retrievers import memstrata_retriever  # imports the engine: only when asked

    return memstrata_retriever(conversation)


def _memstrata_bm25(conversation: Conversation) -> Retriever:
    from .retrievers import memstrata_retriever

    return memstrata_retriever(conversation, embedder="none")


RETRIEVERS: dict[str, MakeRetriever] = {
    "bm25": bm25_retriever,
    "memstrata": _memstrata,
    "memstrata-bm25": _memstrata_bm25,
}


# --- command line --------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m memstrata.benchmarks.locomo``: print (and optionally write) the report."""
    parser = argparse.ArgumentParser(description="LoCoMo retrieval benchmark (recall@k).")
    parser.add_argument("--data", type=Path, required=True, help="a LoCoMo JSON file")
    parser.add_argument("--json", type=Path, help="also write the report to this file")
    parser.add_argument("--retriever", choices=sorted(RETRIEVERS), default="bm25")
    parser.add_argument(
        "--limit-questions",
        type=int,
        metavar="N",
        help="score only the first N questions of each conversation",
    )
    args = parser.parse_args(argv)
    conversations = load(args.data)
    if args.limit_questions is not None:
        conversations = limit_questions(conversations, args.limit_questions)
    report = evaluate(conversations, RETRIEVERS[args.retriever])
    text = json.dumps(report.as_json(), indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
