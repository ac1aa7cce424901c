"""Issue 16's recall ideas on LoCoMo, each measured leave-one-conversation-out.

An idea is an *ingest variant* (what text each turn is indexed with: resolved
dates, the previous turn's salient words, the image's search query) and a
*search variant* (an extra term added to the fused scores before the
conversation context: a session-document BM25 score, an entity second hop, a
third list from another static embedding), each search variant with a grid
of weights. The extra terms are injected by wrapping ``hybrid._in_context``
(the fused candidates are its input), so ``src`` is not touched.

For each conversation, ingest variant and weight: recall@1/5/10/20 and the
session hit of every question, and the relevance of the 200 unrelated
queries (``benchmarks.unrelated``), as ``locomo_cv.Observed``. Then nested
leave-one-out: for each held-out conversation, the weight with the best
recall@10 (then @5) on the other four, then the relevance floor chosen on the
four with that weight (``locomo_cv.choose``), both measured on the fifth.
Weight 0 of every search variant is the baseline of its ingest variant.

Since relative dates are resolved in what BM25 reads (``Chunk.words``,
2026-11-28), every ingest variant includes them there; the figures in
docs/search-history.md for "plain", "dates", "referents" and "imgquery" were measured
before, on the tree of commit e04c006 (``dates`` then appended them to the
recorded text, with the prototype of ``index.relative_dates``, which gives
the same words on every LoCoMo turn and is what ``dates`` appends now).

Run::

    nice .venv/bin/python bench/recall_ideas.py --data ../shared/data/locomo/locomo_dev.json \\
        --ingest plain dates --search none sessiondoc --json /tmp/out.json
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import struct
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from memstrata.benchmarks import locomo, locomo_cv
from memstrata.benchmarks.locomo import DEFAULT_KS, session_hit
from memstrata.benchmarks.unrelated import UNRELATED
from memstrata.index import hybrid as hybrid_module
from memstrata.index.hybrid import Weights
from memstrata.index.lexical import BM25, document_terms, query_tokens
from memstrata.index.referents import STOPWORDS, refers, salient
from memstrata.index.relative_dates import resolved_dates as expand_dates
from memstrata.memory import Memory

OFF = Weights(floor_lexical=0.0, floor_vector=0.0, floor_lexical_alone=0.0)

# --- ingest variants -----------------------------------------------------------------


def extras(conversation: locomo.Conversation, variant: str, raw: dict[str, dict]) -> dict[str, str]:
    """dia_id -> text appended to the turn at ingest, for ``variant``."""
    out: dict[str, str] = {}
    for session in conversation.sessions:
        previous = ""
        for turn in session.turns:
            add: list[str] = []
            if variant in ("dates", "all"):
                add.extend(expand_dates(turn.text, session.date.date()))
            if variant in ("referents", "all") and previous and refers(turn.text):
                add.extend(salient(previous))
            if variant == "imgquery":
                q = raw.get(turn.dia_id, {}).get("query")
                if q:
                    add.append(str(q))
            if add:
                out[turn.dia_id] = " ".join(add)
            previous = turn.text + (f" {turn.caption}" if turn.caption else "")
    return out


def raw_turns(path: Path) -> dict[str, dict[str, dict]]:
    data = json.loads(path.read_text())
    out: dict[str, dict[str, dict]] = {}
    for sample in data:
        d = sample["conversation"]
        out[str(sample["sample_id"])] = {
            str(t["dia_id"]): t
            for key, turns in d.items()
            if re.fullmatch(r"session_\d+", key)
            for t in turns
        }
    return out


def record(memory: Memory, conversation: locomo.Conversation, extra: dict[str, str]) -> dict:
    dia_of: dict[str, str] = {}
    for session in conversation.sessions:
        for offset, turn in enumerate(session.turns):
            text = (
                turn.text if not turn.caption else f"{turn.text} [shares a photo: {turn.caption}]"
            )
            if turn.dia_id in extra:
                text = f"{text} ({extra[turn.dia_id]})"
            recorded = memory.record_turn(
                f"{conversation.sample_id}-s{session.number}",
                user=text,
                assistant="",
                meta={"speakers": {"user": turn.speaker}, "dia_id": turn.dia_id},
                at=session.date + timedelta(seconds=offset),
            )
            dia_of[recorded.id] = turn.dia_id
    memory.reindex()
    return dia_of


# --- a static embedding from the wordllama wheel (read with numpy) --------------------

WL_DIR = Path("/tmp/recall_wl/wordllama")


class WordLlama:
    def __init__(self, folder: Path = WL_DIR) -> None:
        from tokenizers import Tokenizer

        raw = (folder / "weights/l2_supercat_256.safetensors").read_bytes()
        (n,) = struct.unpack("<Q", raw[:8])
        header = json.loads(raw[8 : 8 + n])["embedding.weight"]
        start, end = header["data_offsets"]
        table = np.frombuffer(raw[8 + n + start : 8 + n + end], dtype=np.float16)
        self.table = table.reshape(header["shape"]).astype(np.float32)
        config = json.loads((folder / "tokenizers/l2_supercat_tokenizer_config.json").read_text())
        self.tokenizer = Tokenizer.from_str(json.dumps(config))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.table.shape[1]), dtype=np.float32)
        for i, enc in enumerate(self.tokenizer.encode_batch(list(texts), add_special_tokens=False)):
            if enc.ids:
                out[i] = self.table[enc.ids].mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1.0)


_WL: WordLlama | None = None


def wordllama() -> WordLlama:
    global _WL
    if _WL is None:
        _WL = WordLlama()
    return _WL


# --- search variants (added to the fused scores before the context) -------------------


@dataclass
class Extra:
    """Per-conversation data the search variants need (built from ``index.chunks``)."""

    cids: list[int]
    texts: list[str]
    session_of: dict[int, str]
    session_bm25: BM25
    session_keys: dict[int, str]
    entities: dict[int, set[str]]
    entity_df: Counter
    wl: np.ndarray | None
    centroids: np.ndarray | None = None
    centroid_keys: list[str] | None = None
    embed: Callable[[Sequence[str]], np.ndarray] | None = None


STATE: dict[str, Any] = {"query": "", "variant": "none", "weight": 0.0, "extra": None}
_ENTITY = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]{2,}\b")


def entities_of(text: str, skip: set[str]) -> set[str]:
    return {w.lower() for w in _ENTITY.findall(text) if w.lower() not in skip}


def build_extra(
    memory: Memory, speakers: Sequence[str], with_wl: bool, with_centroids: bool = False
) -> Extra:
    state = memory._search._searcher()  # noqa: SLF001 - bench only
    index = state.index
    cids, texts, session_of = [], [], {}
    for cid, chunk in index.chunks.items():
        if chunk.layer == "transcripts" and chunk.live:
            cids.append(cid)
            texts.append(chunk.body)
            session_of[cid] = chunk.session or ""
    by_session: dict[str, list[str]] = defaultdict(list)
    for cid, text in zip(cids, texts, strict=True):
        by_session[session_of[cid]].append(text)
    bm = BM25()
    keys = {}
    for n, (session, parts) in enumerate(sorted(by_session.items())):
        bm.add(n, document_terms(" ".join(parts)))
        keys[n] = session
    skip = {s.lower() for s in speakers} | {w.lower() for w in STOPWORDS} | {"i'm"}
    ents = {
        cid: entities_of(text.partition(": ")[2], skip)
        for cid, text in zip(cids, texts, strict=True)
    }
    df: Counter = Counter()
    for e in ents.values():
        df.update(e)
    wl = wordllama().embed(texts) if with_wl else None
    extra = Extra(cids, texts, session_of, bm, keys, ents, df, wl)
    if with_centroids and state.embedder is not None:
        vectors = np.asarray(state.embedder.embed(texts), dtype=np.float32)
        names = sorted(by_session)
        rows = []
        for name in names:
            member = [i for i, cid in enumerate(cids) if session_of[cid] == name]
            mean = vectors[member].mean(axis=0)
            rows.append(mean / np.linalg.norm(mean))
        extra.centroids = np.stack(rows)
        extra.centroid_keys = names
        extra.embed = state.embedder.embed
    return extra


_ORIGINAL_IN_CONTEXT = hybrid_module._in_context


def _minmax(pairs: list[tuple[int, float]]) -> dict[int, float]:
    if not pairs:
        return {}
    top = max(s for _, s in pairs)
    low = min(s for _, s in pairs)
    span = top - low
    return {c: (0.001 + 0.999 * (s - low) / span) if span > 0 else 1.0 for c, s in pairs}


def patched_in_context(index, fused, accept, weights):  # type: ignore[no-untyped-def]
    extra: Extra | None = STATE["extra"]
    w = STATE["weight"]
    variant = STATE["variant"]
    if extra is not None and w and fused:
        fused = dict(fused)
        if variant.startswith("sessionvec") and extra.centroids is not None:
            q = np.asarray(extra.embed([STATE["query"]]), dtype=np.float32)[0]
            sims = extra.centroids @ q
            low, top = float(sims.min()), float(sims.max())
            score = {
                name: (float(v) - low) / (top - low) if top > low else 1.0
                for name, v in zip(extra.centroid_keys or [], sims, strict=True)
            }
            for cid in list(fused):
                chunk = index.chunks[cid]
                if chunk.layer == "transcripts":
                    fused[cid] += w * score.get(chunk.session or "", 0.0)
        elif variant.startswith("sessiondoc"):
            terms = query_tokens(STATE["query"])
            found = extra.session_bm25.top(terms, 1000, k1=weights.k1, b=weights.b)
            if found:
                top = found[0][1]
                score = {extra.session_keys[n]: s / top for n, s in found}
                for cid in list(fused):
                    chunk = index.chunks[cid]
                    if chunk.layer == "transcripts":
                        fused[cid] += w * score.get(chunk.session or "", 0.0)
        elif variant == "entityhop":
            head = sorted(fused.items(), key=lambda p: -p[1])[:5]
            n = len(extra.cids)
            idf = lambda e: math.log(1 + n / (1 + extra.entity_df[e]))  # noqa: E731
            top = head[0][1] if head else 1.0
            seed: dict[str, float] = {}
            for cid, s in head:
                for e in extra.entities.get(cid, ()):
                    seed[e] = max(seed.get(e, 0.0), s / top)
            if seed:
                gains = []
                for cid in extra.cids:
                    g = sum(seed[e] * idf(e) for e in extra.entities[cid] if e in seed)
                    if g > 0:
                        gains.append((cid, g))
                best = max((g for _, g in gains), default=0.0)
                for cid, g in gains:
                    if accept(index.chunks[cid]):
                        fused[cid] = fused.get(cid, 0.0) + w * g / best
        elif variant == "wordllama" and extra.wl is not None:
            q = wordllama().embed([STATE["query"]])[0]
            sims = extra.wl @ q
            order = np.argsort(-sims)[: weights.candidates]
            pairs = [(extra.cids[i], float(sims[i])) for i in order if sims[i] > 0]
            pairs = [(c, s) for c, s in pairs if accept(index.chunks[c])]
            for cid, part in _minmax(pairs).items():
                fused[cid] = fused.get(cid, 0.0) + w * part
    if w and variant.endswith("_only"):
        weights = replace(weights, session=0.0)  # the session document instead of the best turn
    return _ORIGINAL_IN_CONTEXT(index, fused, accept, weights)


hybrid_module._in_context = patched_in_context  # type: ignore[assignment]


# --- measuring -------------------------------------------------------------------------

GRIDS = {
    "none": (0.0,),
    "sessiondoc": (0.0, 0.1, 0.2, 0.35, 0.5, 0.8),
    "sessiondoc_only": (0.0, 0.2, 0.35, 0.5, 0.7, 1.0),
    "sessionvec": (0.0, 0.1, 0.2, 0.35, 0.5, 0.8),
    "sessionvec_only": (0.0, 0.2, 0.35, 0.5, 0.7, 1.0),
    "entityhop": (0.0, 0.05, 0.1, 0.2, 0.35),
    "wordllama": (0.0, 0.15, 0.3, 0.5, 0.7, 1.0),
}


def ask(memory: Memory, dia_of: dict[str, str], question: str, k: int) -> list[str]:
    STATE["query"] = question
    hits = memory.search(question, k=k, layers=("transcripts",), weights=OFF)
    turns = [(hit.ref or "").partition("#")[0] for hit in hits]
    return list(dict.fromkeys(dia_of[t] for t in turns if t in dia_of))


def observe(
    conversation: locomo.Conversation,
    extra_text: dict[str, str],
    searches: Sequence[str],
    embedder: str,
) -> tuple[dict[tuple[str, float], locomo_cv.Observed], dict[str, float]]:
    folder = Path(tempfile.mkdtemp(prefix="memstrata-ideas-"))
    out: dict[tuple[str, float], locomo_cv.Observed] = {}
    cost: dict[str, float] = {}
    try:
        with Memory.open(folder / "ws", embedder=embedder, session_max_turns=0) as memory:
            start = time.perf_counter()
            dia_of = record(memory, conversation, extra_text)
            cost["ingest_s"] = time.perf_counter() - start
            STATE.update(extra=None, weight=0.0, variant="none")
            unrelated = []
            for query in UNRELATED:
                ask(memory, dia_of, query, 10)
                unrelated.append(locomo_cv._last())  # noqa: SLF001
            start = time.perf_counter()
            extra = build_extra(
                memory,
                conversation.speakers,
                "wordllama" in searches,
                any(v.startswith("sessionvec") for v in searches),
            )
            cost["extra_build_s"] = time.perf_counter() - start
            base: locomo_cv.Observed | None = None
            for variant in searches:
                for weight in GRIDS[variant]:
                    if weight == 0.0 and base is not None:
                        out[(variant, 0.0)] = base
                        continue
                    STATE.update(extra=extra, weight=weight, variant=variant)
                    start = time.perf_counter()
                    asked = ask_all(ask, memory, dia_of, conversation)
                    cost[f"search_ms:{variant}:{weight}"] = (
                        (time.perf_counter() - start) * 1000 / max(len(asked), 1)
                    )
                    out[(variant, weight)] = locomo_cv.Observed(
                        conversation.sample_id, tuple(asked), tuple(unrelated)
                    )
                    if weight == 0.0:
                        base = out[(variant, weight)]
            STATE.update(extra=None, weight=0.0, variant="none")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return out, cost


def ask_all(
    asker: Callable[[Memory, dict[str, str], str, int], list[str]],
    memory: Memory,
    dia_of: dict[str, str],
    conversation: locomo.Conversation,
    each: Callable[[locomo.Question, list[str], tuple[float, ...]], None] | None = None,
) -> list[locomo_cv.Asked]:
    """Every question of ``conversation`` with evidence, asked by ``asker``:
    its recall at each of ``DEFAULT_KS``, its session hit and the relevance
    the search measured (``locomo_cv.Asked``); ``each`` is told every
    question, what was found and its recalls."""
    asked = []
    for question in conversation.questions:
        if not question.evidence:
            continue
        found = asker(memory, dia_of, question.text, max(DEFAULT_KS))
        wanted = set(question.evidence)
        recalls = tuple(len(wanted.intersection(found[:k])) / len(wanted) for k in DEFAULT_KS)
        asked.append(
            locomo_cv.Asked(
                question.category,
                recalls,
                session_hit(question.evidence, found),
                locomo_cv._last(),  # noqa: SLF001
            )
        )
        if each is not None:
            each(question, found, recalls)
    return asked


def per_category(observed: Sequence[locomo_cv.Observed]) -> dict[str, float]:
    rows: dict[int, list[float]] = defaultdict(list)
    for o in observed:
        for a in o.asked:
            rows[a.category].append(a.recalls[DEFAULT_KS.index(10)])
    return {str(c): round(sum(v) / len(v), 4) for c, v in sorted(rows.items())}


def nested(
    table: dict[tuple[str, float], list[locomo_cv.Observed]], keys: list[tuple[str, float]]
) -> dict[str, Any]:
    """Leave one conversation out: the key, then the floor, chosen on the other four."""
    n = len(next(iter(table.values())))
    folds = []
    held_rows: list[locomo_cv.Observed] = []
    for held in range(n):

        def train(key: tuple[str, float], held: int = held) -> list[locomo_cv.Observed]:
            return [o for i, o in enumerate(table[key]) if i != held]

        best = max(
            keys,
            key=lambda key: (
                (f := locomo_cv.figures(train(key), (0.0, 0.0)))["recall@10"],
                f["recall@5"],
                -key[1],
            ),
        )
        floor = locomo_cv.choose(train(best))
        seen = locomo_cv.figures([table[best][held]], floor)
        folds.append(
            {"held": table[best][held].sample_id, "key": list(best), "floor": floor, **seen}
        )
        held_rows.append(table[best][held])
    figs = [k for k in folds[0] if k.startswith(("recall", "session", "false"))]
    return {
        "cross_validated": {k: round(sum(f[k] for f in folds) / n, 4) for k in figs},
        "held_out_recall@10_by_category": per_category(held_rows),
        "folds": folds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--ingest", nargs="+", default=["plain"])
    parser.add_argument("--search", nargs="+", default=["none"])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--limit-questions", type=int)
    parser.add_argument("--limit-conversations", type=int)
    args = parser.parse_args()
    conversations = locomo.load(args.data)[: args.limit_conversations]
    if args.limit_questions is not None:
        conversations = locomo.limit_questions(conversations, args.limit_questions)
    raws = raw_turns(args.data)
    report: dict[str, Any] = {"embedder": args.embedder, "variants": {}}
    for ingest in args.ingest:
        table: dict[tuple[str, float], list[locomo_cv.Observed]] = defaultdict(list)
        costs: list[dict[str, float]] = []
        for conversation in conversations:
            extra = (
                {}
                if ingest == "plain"
                else extras(conversation, ingest, raws[conversation.sample_id])
            )
            seen, cost = observe(conversation, extra, args.search, args.embedder)
            for key, value in seen.items():
                table[key].append(value)
            costs.append(cost)
            print(
                ingest,
                conversation.sample_id,
                {k: round(v, 2) for k, v in cost.items()},
                flush=True,
            )
        cost_mean = {k: round(sum(c[k] for c in costs) / len(costs), 3) for k in costs[0]}
        for variant in args.search:
            keys = [(variant, w) for w in GRIDS[variant]]
            fixed = {
                f"{w}": {
                    **locomo_cv.figures(table[(variant, w)], (0.0, 0.0)),
                    "by_category@10": per_category(table[(variant, w)]),
                }
                for w in GRIDS[variant]
            }
            result = {"nested_cv": nested(table, keys), "each_weight_no_floor": fixed}
            name = f"{ingest}+{variant}"
            report["variants"][name] = {**result, "cost": cost_mean}
            cv = result["nested_cv"]["cross_validated"]
            print(name, cv, result["nested_cv"]["held_out_recall@10_by_category"], flush=True)
            for w, f in fixed.items():
                print(
                    "   w",
                    w,
                    f["recall@5"],
                    f["recall@10"],
                    f["session_recall@5"],
                    f["by_category@10"],
                )
            if args.json:
                args.json.write_text(json.dumps(report, indent=1) + "\n")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
