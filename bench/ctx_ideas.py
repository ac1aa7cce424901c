"""Issue 16, second round: contextual vectors, referents tuning, the session's
date as words, the query's scaffolding kept from the embedder; each measured
by nested leave-one-conversation-out cross-validation, as ``recall_ideas.py``.

Nothing in ``src`` is changed; three seams are wrapped for the run:

* ``lexical.bm25_text`` (what BM25 and the floor's coverage read of a chunk):
  a *BM25 variant* ("ref3", "sessdate", ...) is the text built another way;
  the postings are built at the first search of a fresh workspace, so each
  BM25 variant records the conversations again.
* ``hybrid._nearest`` (the vector list): a *vector variant* scores each turn
  by its own cosine mixed with the cosine of its window (the turn before and
  the turn, or before, turn and after, embedded as one text), with a grid of
  mixes; weight 0 is the turn's cosine alone.
* ``hybrid._nearest`` again for ``vprf`` / ``vprf5``: the query's vector
  moved towards the mean of its first 3 / 5 hits' stored vectors, then the
  vector list asked again (pseudo-relevance feedback on the vectors);
* ``MiniLMEmbedder.embed``: a disk cache keyed by text (``--cache``), so a
  variant embeds only what it has not seen; and a *query variant* strips the
  question's scaffolding or the speakers' names from the text the embedder
  reads (BM25 reads the question as it is).

For each conversation and variant: recall@1/5/10/20 and the session hit of
every question and the relevance of the 200 unrelated queries
(``locomo_cv.Observed``); then for each held-out conversation the variant
(within a family: its weights, or the BM25 variants compared) with the best
recall@10 (then @5) on the other four, the floor chosen on the four with it,
both measured on the fifth.

Run::

    nice .venv/bin/python bench/ctx_ideas.py --data ../shared/data/locomo/locomo_dev.json \\
        --bm25 shipped ref3 ref10 --search none ctxmix_prev --json /tmp/ctx.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import re
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

import query_expand  # the BM25 query expansion of the "qexp" variants
import query_map  # the query encoder of the "qmap" variant
import word_types  # the kinds of the "types" BM25 variants
from memstrata.benchmarks import locomo, locomo_cv
from memstrata.benchmarks.locomo import DEFAULT_KS
from memstrata.benchmarks.retrievers import record_conversation
from memstrata.benchmarks.unrelated import UNRELATED
from memstrata.embed.onnx import MiniLMEmbedder
from memstrata.index import hybrid as hybrid_module
from memstrata.index import lexical as lexical_module
from memstrata.index import relevance as relevance_module
from memstrata.index.answers import answer_type, gathers
from memstrata.index.hybrid import Weights
from memstrata.index.referents import refers, salient
from memstrata.index.text import STOPWORDS, index_text
from memstrata.memory import Memory
from recall_ideas import ask_all

OFF = Weights(floor_lexical=0.0, floor_vector=0.0, floor_lexical_alone=0.0)
STATE: dict[str, Any] = {
    "bm25": "shipped",
    "vec": "none",
    "weight": 0.0,
    "query": "",
    "speakers": (),
    "windows": None,
    "qfixed": 0,  # a query mode for every variant of the run (``--qstrip``)
    "turn_text": False,  # the vector variants embed the turn without "Speaker: "
}

# --- the embedding cache ---------------------------------------------------------------

CACHE: dict[str, bytes] = {}
CACHE_FILE: Path | None = None
_ORIGINAL_EMBED = MiniLMEmbedder.embed


def _key(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


MAPPED: list[Any] = []  # the query map of --qmap (query_map.Mapped), once loaded


# (conversation id, ridge) -> the query adapter fitted on the other conversations
ADAPT: dict[tuple[str, float], np.ndarray] = {}


def cached_embed(self: MiniLMEmbedder, texts: Sequence[str]) -> np.ndarray:
    items = list(texts)
    asking = STATE.get("asking") and len(items) == 1
    if STATE["vec"] == "qmap" and STATE["weight"] and asking:
        return MAPPED[0].embed(items).astype(np.float32)
    if STATE["vec"] == "qadapt" and STATE["weight"] and asking:
        plain = cached_embed_plain(self, items)
        moved = plain @ ADAPT[(STATE["conv"], STATE["weight"])]
        return (moved / np.linalg.norm(moved, axis=1, keepdims=True)).astype(np.float32)
    vectors = cached_embed_plain(self, items)
    if asking:
        STATE["captured"] = vectors[0]
    return vectors


def cached_embed_plain(self: MiniLMEmbedder, items: list[str]) -> np.ndarray:
    mode = int(STATE["weight"]) if STATE["vec"] == "qstrip" else STATE["qfixed"]
    if mode and items == [STATE["query"]]:
        items = [strip_query(items[0], mode, STATE["speakers"])]
    keys = [_key(t) for t in items]
    missing = [i for i, k in enumerate(keys) if k not in CACHE]
    if missing:
        fresh = _ORIGINAL_EMBED(self, [items[i] for i in missing])
        for row, i in enumerate(missing):
            CACHE[keys[i]] = np.asarray(fresh[row], dtype=np.float32).tobytes()
    return np.stack([np.frombuffer(CACHE[k], dtype=np.float32) for k in keys])


MiniLMEmbedder.embed = cached_embed  # type: ignore[method-assign]


def save_cache() -> None:
    if CACHE_FILE is not None:
        tmp = CACHE_FILE.with_suffix(".tmp")
        tmp.write_bytes(pickle.dumps(CACHE))
        tmp.replace(CACHE_FILE)


# --- query variants (what the embedder reads of the question) -----------------------

_SCAFFOLD = re.compile(
    r"^\s*(?:(?:when|what|where|who|whom|which|why|how(?: many| much| long| often| old)?)"
    r"(?:\s+(?:kind|kinds|type|types|sort)\s+of\s+\w+)?"
    r"(?:\s+(?:did|does|do|is|was|are|were|has|have|had|would|could|might|will|can))?"
    r"|(?:did|does|do|is|was|are|were|has|have|had|would|could|might|will|can))\b\s*",
    re.I,
)


def strip_query(query: str, mode: int, speakers: Sequence[str]) -> str:
    """1: the speakers' names out; 2: the leading question words out; 3: both."""
    out = query
    if mode & 2:
        out = _SCAFFOLD.sub("", out, count=1)
    if mode & 1:
        for name in speakers:
            out = re.sub(rf"\b{re.escape(name)}(?:'s|’s)?\b", " ", out, flags=re.I)
        out = re.sub(r"\s+", " ", out).strip()
    return out if re.search(r"\w", out) else query


# --- BM25 variants (what BM25 reads of a turn) ----------------------------------------

_ORIGINAL_BM25_TEXT = lexical_module.bm25_text


def _around(index: Any, cid: int, chunk: Any, reach: int) -> tuple[list[Any], list[Any]]:
    ids = index.neighbours(cid, reach)
    before = [index.chunks[i] for i in ids if index.chunks[i].line_start < chunk.line_start]
    after = [index.chunks[i] for i in ids if index.chunks[i].line_start > chunk.line_start]
    return before, after


def variant_bm25_text(index: Any, cid: int, chunk: Any) -> str:
    variant = STATE["bm25"]
    if variant == "shipped" or chunk.layer != "transcripts":
        return _ORIGINAL_BM25_TEXT(index, cid, chunk)
    words = chunk.words
    extra: list[str] = []
    parts = variant.split("+")
    for part in parts:
        if part == "sessdate" and chunk.created_at is not None:
            day = chunk.created_at.date()
            extra += [f"{day.day} {day:%B %Y}", f"{day:%B %Y}"]
        elif part == "sessmonth" and chunk.created_at is not None:
            extra += [f"{chunk.created_at.date():%B %Y}"]
        elif part == "bigram":  # adjacent content words as one more term each
            extra += _bigrams(re.findall(r"[^\W_]+", index_text(words).lower()))
        elif kinds := re.fullmatch(r"(p?)types(\d\d)", part):  # the kinds a turn names
            least = int(kinds[2]) / 100
            extra += word_types.kinds(chunk.text, least, STATE["speakers"], bool(kinds[1]))
    ref = next((p for p in parts if p.startswith("ref")), "ref6")
    m = re.fullmatch(r"ref(\d+|all|none)(prev2)?(next)?(always)?", ref)
    if m is None:
        raise SystemExit(f"unknown BM25 variant {variant!r}")
    limit = {"all": 1000, "none": 0}.get(m[1]) or int(m[1])
    if limit and (m[4] or refers(chunk.text)):
        before, _ = _around(index, cid, chunk, 2 if m[2] else 1)
        for previous in reversed(before):  # the nearest first
            extra += salient(previous.text, limit)
    if limit and m[3] and chunk.text.rstrip().endswith("?"):
        _, after = _around(index, cid, chunk, 1)
        for following in after:
            extra += salient(following.text, limit)
    return f"{words} ({' '.join(extra)})" if extra else words


lexical_module.bm25_text = variant_bm25_text


def _bigrams(tokens: Sequence[str]) -> list[str]:
    """Adjacent content words (function words skipped) joined into one token
    (``BIGRAM`` between them: no tokenizer splits it, no word contains it)."""
    kept = [t for t in tokens if t not in STOPWORDS]
    return [f"{a}{BIGRAM}{b}" for a, b in zip(kept, kept[1:], strict=False)]


BIGRAM = "qzq"
_ORIGINAL_STEMMED = hybrid_module.stemmed


def variant_stemmed(words: list[str]) -> list[str]:
    """The query's terms, with its bigrams when the BM25 variant has them."""
    terms = _ORIGINAL_STEMMED(words)
    if "bigram" in STATE["bm25"].split("+"):
        terms += [t for t in _ORIGINAL_STEMMED(_bigrams(words)) if t not in terms]
    return terms


hybrid_module.stemmed = variant_stemmed
_ORIGINAL_LEXICAL_TOP = lexical_module.Lexical.top


def variant_lexical_top(self, index, terms, limit, *, k1, b, **shipped):  # type: ignore[no-untyped-def]
    """``qexp<n>``: the question's words also ask for their ``n`` nearest
    words by the static table, weighted ``STATE["weight"]`` (the relevance
    floor's coverage still reads the question's own terms)."""
    vec, w = STATE["vec"], STATE["weight"]
    if not (STATE.get("asking") and w and vec.startswith("qexp")):
        return _ORIGINAL_LEXICAL_TOP(self, index, terms, limit, k1=k1, b=b, **shipped)
    m = re.fullmatch(r"qexp(\d+)(c?)(w?)", vec)  # "c": only neighbours of cosine >= 0.6
    assert m is not None, vec
    if m[3] and answer_type(STATE["query"]) == 0:  # "w": not for a "when" question
        return _ORIGINAL_LEXICAL_TOP(self, index, terms, limit, k1=k1, b=b, **shipped)
    least = 0.6 if m[2] else 0.0
    extra = query_expand.expansion(STATE["query"], int(m[1]), STATE["speakers"], least)
    with self._lock:  # noqa: SLF001 - bench only
        with index.lock:
            self._catch_up(index)  # noqa: SLF001
        return query_expand.weighted_top(self._bm25, terms, extra, w, limit, k1, b)  # noqa: SLF001


lexical_module.Lexical.top = variant_lexical_top  # type: ignore[method-assign]
_ORIGINAL_FACTORED = hybrid_module._factored


def variant_factored(index, query, terms, fused, k, weights, now):  # type: ignore[no-untyped-def]
    """``kind<NN>``: a question that names a kind ("Which cities…") raises, by
    ``1 + weight``, the turns with a word of that kind (static cosine ≥ NN/100)."""
    vec, w = STATE["vec"], STATE["weight"]
    if STATE.get("asking") and w and vec.startswith("kind"):
        asked = set(word_types.asked_kinds(query))
        if asked:
            least = int(vec[4:]) / 100
            chunks = index.chunks
            fused = {
                cid: score * (1 + w)
                if asked & word_types.chunk_kinds((cid, vec), chunks[cid].text, least)
                else score
                for cid, score in fused.items()
            }
    return _ORIGINAL_FACTORED(index, query, terms, fused, k, weights, now)


hybrid_module._factored = variant_factored  # type: ignore[assignment]
relevance_module.bm25_text = variant_bm25_text  # the floor's coverage reads the same text


# --- vector variants (the turn's cosine mixed with its window's) ----------------------

_ORIGINAL_NEAREST = hybrid_module._nearest


def build_windows(memory: Memory, kind: str) -> dict[str, Any]:
    state = memory._search._searcher()  # noqa: SLF001 - bench only
    index = state.index
    cids, bodies, windows = [], [], []
    for cid, chunk in index.chunks.items():
        if chunk.layer != "transcripts" or not chunk.live:
            continue
        reach = 2 if kind == "both2" else 1
        before, after = _around(index, cid, chunk, reach)
        own = (lambda c: c.text) if STATE["turn_text"] else (lambda c: c.body)
        text = own(chunk)
        if kind == "both2":  # two messages on each side
            text = "\n".join([*(own(c) for c in before), text, *(own(c) for c in after)])
        if kind in ("prev", "both") and before:
            text = f"{own(before[-1])}\n{text}"
        if kind in ("next", "both") and after:
            text = f"{text}\n{own(after[0])}"
        cids.append(cid)
        bodies.append(own(chunk))
        windows.append(text)
    embed = state.embedder.embed
    start = time.perf_counter()
    turn = np.asarray(embed(bodies), dtype=np.float32)
    window = np.asarray(embed(windows), dtype=np.float32)
    # the window from the turns' own vectors (nothing embedded again)
    place = {cid: i for i, cid in enumerate(cids)}
    avg = turn.copy()
    for cid in cids:
        chunk = index.chunks[cid]
        before, after = _around(index, cid, chunk, 1)
        near = (before[-1:] if kind in ("prev", "both") else []) + (
            after[:1] if kind in ("next", "both") else []
        )
        for other in near:
            j = next((c for c in index.neighbours(cid) if index.chunks[c] is other), None)
            if j is not None and j in place:
                avg[place[cid]] += turn[place[j]]
    avg /= np.linalg.norm(avg, axis=1, keepdims=True)
    return {
        "cids": cids,
        "turn": turn,
        "window": window,
        "avg": avg,
        "seconds": time.perf_counter() - start,
    }


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")


def build_sentences(memory: Memory) -> dict[str, Any]:
    """``sent``: each turn's stored (shipped) vector, and its sentences' own
    vectors (a turn of one sentence: none), for the best sentence's cosine."""
    state = memory._search._searcher()  # noqa: SLF001 - bench only
    index = state.index
    cids, stored, owner, texts = [], [], [], []
    for cid, chunk in index.chunks.items():
        if chunk.layer != "transcripts" or not chunk.live or cid not in index.vectors:
            continue
        row = len(cids)
        cids.append(cid)
        stored.append(np.frombuffer(index.vectors[cid], dtype=np.float32))
        parts = [p for p in _SENTENCE_END.split(chunk.body.strip()) if len(p.split()) >= 3]
        if len(parts) > 1:
            owner += [row] * len(parts)
            texts += parts
    start = time.perf_counter()
    sentences = np.asarray(state.embedder.embed(texts), dtype=np.float32)
    return {
        "cids": cids,
        "stored": np.vstack(stored),
        "owner": np.asarray(owner, dtype=np.int64),
        "sentences": sentences,
        "seconds": time.perf_counter() - start,
    }


def patched_nearest(index, vectors, query, wide, accept, layers=None):  # type: ignore[no-untyped-def]
    windows = STATE["windows"]
    w = STATE["weight"]
    vec = STATE["vec"]
    if vec.startswith("vprf") and w:  # the query moved towards its first hits' vectors
        first = _ORIGINAL_NEAREST(index, vectors, query, wide, accept, layers)
        top = int(vec[4:] or 3)
        near = [np.frombuffer(index.vectors[cid], dtype=np.float32) for cid, _ in first[:top]]
        if near:
            moved = np.asarray(query, dtype=np.float32) + w * np.mean(near, axis=0)
            query = moved / np.linalg.norm(moved)
        return _ORIGINAL_NEAREST(index, vectors, query, wide, accept, layers)
    if vec == "sent" and w and windows is not None:
        q = np.asarray(query, dtype=np.float32)
        base = windows["stored"] @ q
        best = base.copy()
        if len(windows["owner"]):
            np.maximum.at(best, windows["owner"], windows["sentences"] @ q)
        score = (1 - w) * base + w * best
        return _ranked(index, windows["cids"], score, wide, accept)
    if windows is None or not w or not vec.startswith("ctx"):
        return _ORIGINAL_NEAREST(index, vectors, query, wide, accept, layers)
    q = np.asarray(query, dtype=np.float32)
    t = windows["turn"] @ q
    s = windows["window"] @ q
    if vec == "ctxown":
        score = t
    elif vec.startswith(("ctxone", "ctxavg")):  # one stored vector: the mix, normalised
        key = ("one", w)
        if key not in windows:
            base = windows["window"] if vec.startswith("ctxone") else windows["avg"]
            mixed = (1 - w) * windows["turn"] + w * base
            windows[key] = mixed / np.linalg.norm(mixed, axis=1, keepdims=True)
        score = windows[key] @ q
    elif vec.startswith("ctxmix"):
        score = (1 - w) * t + w * s
    elif vec.startswith("ctxmax"):
        score = np.maximum(t, w * s)
    else:
        raise SystemExit(f"unknown vector variant {vec!r}")
    return _ranked(index, windows["cids"], score, wide, accept)


def _ranked(index, cids, score, wide, accept):  # type: ignore[no-untyped-def]
    """The ``wide`` best of ``cids`` by ``score`` that ``accept`` takes (a
    score <= 0 being no likeness)."""
    out = []
    for i in np.argsort(-score):
        if score[i] <= 0 or len(out) >= wide:
            break
        cid = cids[i]
        if accept(index.chunks[cid]):
            out.append((cid, float(score[i])))
    return out


hybrid_module._nearest = patched_nearest  # type: ignore[assignment]

GRIDS = {
    "none": (0.0,),
    "sent": (0.0, 0.2, 0.35, 0.5, 0.75),  # the best sentence's cosine mixed in
    "ctxown": (0.0, 1.0),
    "ctxone_prev": (0.0, 0.3, 0.45, 0.6, 0.75, 0.9, 1.0),
    "ctxone_both": (0.0, 0.3, 0.45, 0.6, 0.75, 0.9, 1.0),
    "ctxavg_prev": (0.0, 0.15, 0.3, 0.45, 0.6),
    "ctxavg_both": (0.0, 0.15, 0.3, 0.45, 0.6),
    "ctxmix_prev": (0.0, 0.15, 0.3, 0.45, 0.6, 0.75, 0.9),
    "ctxmix_both": (0.0, 0.15, 0.3, 0.45, 0.6, 0.75, 0.9),
    "ctxmix_both2": (0.0, 0.3, 0.45, 0.6, 0.75),
    "ctxmix_next": (0.0, 0.15, 0.3, 0.45, 0.6, 0.75),
    "ctxmax_prev": (0.0, 0.85, 0.9, 0.95, 1.0),
    "ctxmax_both": (0.0, 0.85, 0.9, 0.95, 1.0),
    "qstrip": (0.0, 1.0, 2.0, 3.0),
    "qmap": (0.0, 1.0),  # the query embedded by a mapped static table (--qmap)
    "qadapt": (0.0, 10.0, 30.0, 100.0),  # the query's vector through a fitted map (the ridge)
    "vprf": (0.0, 0.25, 0.5, 1.0),  # the first 3 hits' vectors added to the query's
    "vprf5": (0.0, 0.25, 0.5, 1.0),
    "agg_diversity": (0.0, 0.1, 0.2, 0.35, 0.5),
    "qexp2": (0.0, 0.1, 0.2, 0.35, 0.5),  # BM25 query expansion: 2 neighbours a word, weight
    "qexp3": (0.0, 0.1, 0.2, 0.35, 0.5),
    "qexp5": (0.0, 0.1, 0.2, 0.35, 0.5),
    "qexp8": (0.0, 0.1, 0.2, 0.35),
    "qexp5c": (0.0, 0.1, 0.2, 0.35, 0.5),  # the same, neighbours of cosine >= 0.6 only
    "qexp3w": (0.0, 0.1, 0.2, 0.35, 0.5),  # the same, not for a "when" question
    "qexp5w": (0.0, 0.1, 0.2, 0.35, 0.5),
    "qexp8w": (0.0, 0.1, 0.2, 0.35),
    "kind45": (0.0, 0.15, 0.3, 0.5),  # a question naming a kind raises turns of that kind
    "kind55": (0.0, 0.15, 0.3, 0.5),
    "gather_more": (0.0, 0.1, 0.2, 0.35),
    "agg_session": (0.0, 0.25, 0.5, 0.75, 1.0),
    "neighbours_down": (0.0, 0.1, 0.2, 0.3),
    "session_down": (0.0, 0.2, 0.4),
    "vector_up": (0.0, 0.15, 0.3),
    "vector_down": (0.0, 0.15, 0.3),
}
# Variants that move one fusion weight (re-tuning it on top of the shipped
# index, e.g. with contextual vectors, which hold the neighbours already).
SHIFTS = {
    "neighbours_down": ("neighbours", -1.0),
    "session_down": ("session", -1.0),
    "vector_up": ("vector", 1.0),
    "vector_down": ("vector", -1.0),
}


# --- measuring -------------------------------------------------------------------------


# A question that gathers (its evidence spread over sessions): "both", "in
# common", "how many times", "What books has ...", "What activities ...".
AGGREGATE = re.compile(
    r"\bboth\b|\bin common\b|\bhow many times\b"
    r"|^(?:what|which)\s+(?:\w+\s+)?\w+s\s+(?:has|have|does|do|did)\b"
    r"|^what (?:\w+ )?(?:activities|things|books|events|places|hobbies|items|types|kinds)\b",
    re.I,
)


# More gathering forms (sixth session): a wh-question in the present perfect
# ("What has X painted?", "Where has X camped?") and a plural subject with
# "are/were" or after "what are X's" ("What symbols are ...", "What are X's
# pets' names?"); the shipped ``answers.gathers`` forms are kept.
GATHERS_MORE = re.compile(
    r"^\s*(?:what|which|where)\b(?:\s+[\w+'’-]+){0,3}\s+(?:has|have)\s+\w+\s+\w+(?:ed|en)\b"
    r"|^\s*(?:what|which)\s+(?:[\w+-]+\s+)?[\w-]+s\s+(?:are|were)\b"
    r"|^\s*what\s+are\s+\w+(?:'s|’s)\s+(?:\w+\s+)?\w+s\b",
    re.I,
)


def weights_for(question: str) -> Weights:
    vec, w = STATE["vec"], STATE["weight"]
    if vec == "gather_more":  # the gathering diversity for the forms beyond the shipped ones
        more = w and GATHERS_MORE.search(question) and not gathers(question)  # (shipped)
        return replace(OFF, diversity=w) if more else OFF
    if w and vec in SHIFTS:  # a fusion weight moved by w (0: as shipped)
        field, sign = SHIFTS[vec]
        return replace(OFF, **{field: getattr(OFF, field) + sign * w})
    if not w or not vec.startswith("agg") or not AGGREGATE.search(question):
        return OFF
    if vec == "agg_diversity":
        return replace(OFF, diversity=w)
    if vec == "agg_session":
        return replace(OFF, session=OFF.session * (1 - w), neighbours=OFF.neighbours * (1 - w))
    raise SystemExit(f"unknown variant {vec!r}")


def ask(memory: Memory, dia_of: dict[str, str], question: str, k: int) -> list[str]:
    STATE["query"] = question
    weights = weights_for(question)
    STATE["asking"] = True
    try:
        hits = memory.search(question, k=k, layers=("transcripts",), weights=weights)
    finally:
        STATE["asking"] = False
    turns = [(hit.ref or "").partition("#")[0] for hit in hits]
    return list(dict.fromkeys(dia_of[t] for t in turns if t in dia_of))


def observe(
    conversation: locomo.Conversation, searches: Sequence[str], dump: list[dict] | None
) -> tuple[dict[tuple[str, float], locomo_cv.Observed], dict[str, float]]:
    folder = Path(tempfile.mkdtemp(prefix="memstrata-ctx-"))
    out: dict[tuple[str, float], locomo_cv.Observed] = {}
    cost: dict[str, float] = {}
    STATE["speakers"] = conversation.speakers
    STATE["conv"] = conversation.sample_id
    try:
        with Memory.open(folder / "ws", embedder="minilm", session_max_turns=0) as memory:
            start = time.perf_counter()
            dia_of = record_conversation(memory, conversation)
            memory.search("warm up", k=1)  # BM25's postings are built at the first search
            cost["ingest_s"] = time.perf_counter() - start
            STATE.update(vec="none", weight=0.0, windows=None)
            unrelated: dict[tuple[str, float], tuple] = {}
            for variant in searches:
                windows = None
                if variant.startswith("ctx"):
                    windows = build_windows(memory, variant.partition("_")[2])
                    cost[f"windows_s:{variant}"] = windows["seconds"]
                elif variant == "sent":
                    windows = build_sentences(memory)
                    cost[f"windows_s:{variant}"] = windows["seconds"]
                for weight in GRIDS[variant]:
                    if weight == 0.0 and ("none", 0.0) in out:
                        out[(variant, 0.0)] = out[("none", 0.0)]
                        continue
                    STATE.update(vec=variant, weight=weight, windows=windows)
                    rel = []
                    for query in UNRELATED:
                        ask(memory, dia_of, query, 10)
                        rel.append(locomo_cv._last())  # noqa: SLF001
                    start = time.perf_counter()

                    def missed(
                        question: locomo.Question, found: list[str], recalls: tuple[float, ...]
                    ) -> None:
                        if dump is not None and recalls[2] < 1:
                            dump.append(
                                {
                                    "conv": conversation.sample_id,
                                    "cat": question.category,
                                    "q": question.text,
                                    "a": question.answer,
                                    "evidence": list(question.evidence),
                                    "found10": found[:10],
                                }
                            )

                    asked = ask_all(
                        ask, memory, dia_of, conversation, missed if variant == "none" else None
                    )
                    cost[f"search_ms:{variant}:{weight}"] = (
                        (time.perf_counter() - start) * 1000 / max(len(asked), 1)
                    )
                    out[(variant, weight)] = locomo_cv.Observed(
                        conversation.sample_id, tuple(asked), tuple(rel)
                    )
                    if variant == "none":
                        out[("none", 0.0)] = out[(variant, weight)]
                    unrelated[(variant, weight)] = tuple(rel)
            STATE.update(vec="none", weight=0.0, windows=None)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return out, cost


def fit_adapters(conversations: Sequence[locomo.Conversation], ridges: Sequence[float]) -> None:
    """``ADAPT``: for each conversation and ridge, a linear map of the query's
    vector fitted on the *other* conversations' questions towards the mean
    stored vector of their evidence turns, shrunk to the identity:
    ``W = (QᵀQ + rI)⁻¹ (QᵀT + rI)`` (the ``qadapt`` variant)."""
    pairs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for conversation in conversations:
        folder = Path(tempfile.mkdtemp(prefix="memstrata-adapt-"))
        STATE["speakers"] = conversation.speakers
        try:
            with Memory.open(folder / "ws", embedder="minilm", session_max_turns=0) as memory:
                dia_of = record_conversation(memory, conversation)
                memory.search("warm up", k=1)
                index = memory._search._searcher().index  # noqa: SLF001 - bench only
                rows: dict[str, list[np.ndarray]] = defaultdict(list)
                for cid, vector in index.vectors.items():
                    chunk = index.chunks[cid]
                    turn = (chunk.ref or "").partition("#")[0]
                    if chunk.layer == "transcripts" and turn in dia_of:
                        rows[dia_of[turn]].append(np.frombuffer(vector, dtype=np.float32))
                queries, targets = [], []
                for question in conversation.questions:
                    found = [r for e in question.evidence for r in rows.get(e, [])]
                    if not found or question.category not in (1, 2, 3, 4):
                        continue
                    STATE["captured"] = None
                    ask(memory, dia_of, question.text, 1)
                    if STATE["captured"] is None:
                        continue
                    target = np.mean(found, axis=0)
                    queries.append(STATE["captured"])
                    targets.append(target / np.linalg.norm(target))
                pairs[conversation.sample_id] = (np.asarray(queries), np.asarray(targets))
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    eye = np.eye(next(iter(pairs.values()))[0].shape[1])
    for held in pairs:
        q = np.vstack([pairs[c][0] for c in pairs if c != held]).astype(np.float64)
        t = np.vstack([pairs[c][1] for c in pairs if c != held]).astype(np.float64)
        for ridge in ridges:
            if ridge:
                w = np.linalg.solve(q.T @ q + ridge * eye, q.T @ t + ridge * eye)
                ADAPT[(held, ridge)] = w.astype(np.float32)


def per_category(observed: Sequence[locomo_cv.Observed], at: int = 10) -> dict[str, float]:
    rows: dict[int, list[float]] = defaultdict(list)
    for o in observed:
        for a in o.asked:
            rows[a.category].append(a.recalls[DEFAULT_KS.index(at)])
    return {str(c): round(sum(v) / len(v), 4) for c, v in sorted(rows.items())}


def nested(table: dict[Any, list[locomo_cv.Observed]], keys: list[Any]) -> dict[str, Any]:
    """Leave one conversation out: the key (the first on a tie), then the
    floor, chosen on the other four, both measured on the fifth."""
    n = len(table[keys[0]])
    folds = []
    held_rows: list[locomo_cv.Observed] = []
    for held in range(n):

        def train(key: Any, held: int = held) -> list[locomo_cv.Observed]:
            return [o for i, o in enumerate(table[key]) if i != held]

        scored = []
        for order, key in enumerate(keys):
            f = locomo_cv.figures(train(key), (0.0, 0.0))
            scored.append(((f["recall@10"], f["recall@5"], -order), key))
        best = max(scored)[1]
        floor = locomo_cv.choose(train(best))
        seen = locomo_cv.figures([table[best][held]], floor)
        folds.append({"held": table[best][held].sample_id, "key": best, "floor": floor, **seen})
        held_rows.append(table[best][held])
    figs = [k for k in folds[0] if k.startswith(("recall", "session", "false"))]
    return {
        "cross_validated": {k: round(sum(f[k] for f in folds) / n, 4) for k in figs},
        "by_category@10": per_category(held_rows),
        "by_category@5": per_category(held_rows, 5),
        "folds": folds,
    }


def main() -> None:
    global CACHE_FILE
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--bm25", nargs="+", default=["shipped"])
    parser.add_argument("--search", nargs="+", default=["none"])
    parser.add_argument("--family", action="append", default=[], help="name=bm25a,bm25b,...")
    parser.add_argument(
        "--join", action="append", default=[], help="name=searchA,searchB: one family of all grids"
    )
    parser.add_argument("--cache", type=Path, default=Path("/tmp/ctxrecall-embeddings.pkl"))
    parser.add_argument("--qstrip", type=int, default=0, help="a query mode for every variant")
    parser.add_argument("--turn-text", action="store_true", help="vectors without 'Speaker: '")
    parser.add_argument("--dump", type=Path, help="the baseline's missed questions (JSON)")
    parser.add_argument("--qmap", type=Path, help="an .npz query map (table, mu, W)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    CACHE_FILE = args.cache
    if args.qmap is not None:
        with np.load(args.qmap) as loaded:
            MAPPED.append(query_map.Mapped(loaded["table"], loaded["mu"], loaded["W"]))
    STATE["qfixed"] = args.qstrip
    STATE["turn_text"] = args.turn_text
    if CACHE_FILE.exists():
        CACHE.update(pickle.loads(CACHE_FILE.read_bytes()))
    conversations = locomo.load(args.data)
    if "qadapt" in args.search:
        fit_adapters(conversations, GRIDS["qadapt"])
        save_cache()
    table: dict[tuple[str, str, float], list[locomo_cv.Observed]] = defaultdict(list)
    costs: dict[str, list[dict[str, float]]] = defaultdict(list)
    dump: list[dict] | None = [] if args.dump else None
    for bm25 in args.bm25:
        STATE["bm25"] = bm25
        for conversation in conversations:
            seen, cost = observe(conversation, args.search, dump if bm25 == args.bm25[0] else None)
            save_cache()
            for (variant, weight), value in seen.items():
                table[(bm25, variant, weight)].append(value)
            costs[bm25].append(cost)
            print(
                bm25, conversation.sample_id, {k: round(v, 2) for k, v in cost.items()}, flush=True
            )
    if dump is not None and args.dump:
        args.dump.write_text(json.dumps(dump, indent=1) + "\n")
    report: dict[str, Any] = {"families": {}, "fixed": {}, "cost": {}}
    for bm25, rows in costs.items():
        report["cost"][bm25] = {k: round(sum(c[k] for c in rows) / len(rows), 3) for k in rows[0]}
    families: dict[str, list[tuple[str, str, float]]] = {}
    for bm25 in args.bm25:
        for variant in args.search:
            families[f"{bm25}+{variant}"] = [(bm25, variant, w) for w in GRIDS[variant]]
    for spec in args.family:
        name, _, members = spec.partition("=")
        families[name] = [(m, "none", 0.0) for m in members.split(",")]
    for spec in args.join:  # the weights of several search variants as one family
        name, _, members = spec.partition("=")
        joined = [(args.bm25[0], v, w) for v in members.split(",") for w in GRIDS[v] if w]
        families[name] = [(args.bm25[0], "none", 0.0), *joined]
    for name, keys in families.items():
        result = nested(table, keys)
        report["families"][name] = result
        cv = result["cross_validated"]
        print(
            f"{name}: {cv} @10 {result['by_category@10']}",
            [
                (
                    f["held"],
                    f["key"][0] if f["key"][0] != keys[0][0] else "",
                    f["key"][2],
                    round(f["recall@10"], 4),
                    round(f["recall@5"], 4),
                )
                for f in result["folds"]
            ],
            flush=True,
        )
    for key, rows in table.items():
        f = locomo_cv.figures(rows, (0.0, 0.0))
        report["fixed"][" ".join(map(str, key))] = {**f, "by_category@10": per_category(rows)}
        print("   ", key, f["recall@5"], f["recall@10"], f["session_recall@5"], per_category(rows))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
