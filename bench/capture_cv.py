"""Cross-validated capture figures: rules alone vs rules + the learned scorer.

Scored per (message, durable category) as the corpus README defines it, over
the five durable categories (correction, proper_noun, preference, decision,
remember). Two cross-validations, each fold training the scorer with
``bench/train_capture.py``'s ``train`` on the other groups only:

* **by author**: hold out ``blind``, ``template``, ``hand``, ``probe``, ``fresh``,
  ``paraphrase``, ``recheck``, ``recheck2``, ``native``, ``native2``, ``native3``,
  ``native4``, ``native5``, ``native6``, ``native7``, ``native8``,
  ``template2`` or ``template3``; train on
  the rest (``original`` included). ``original`` — the messages the rules
  were written from — is never a test group. The per-language table pools
  the held-out folds: every message is predicted by a model that never saw
  its author's messages.
* **by language**: hold out one language (train on the other three, all
  authors); test on its messages not in ``original``.

``unseen/`` and ``unseen2/`` (``train_capture.TEST_ONLY``) are in neither
cross-validation: they are the held-out test sets, never trained on and never
a fold here; measure them with ``bench/capture_author.py --folder unseen``
(or ``unseen2``).

Each variant in ``VARIANTS`` is run through both; the shipped one is
``shipped``. Timing: ``scan`` per 200-character message (en/uz messages
joined and cut), p50/p99 in microseconds, rules alone and with the scorer.

Run::

    .venv/bin/python bench/capture_cv.py --json bench/results/capture_cv.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import timeit
from collections import defaultdict
from collections.abc import Collection
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import memstrata.capture.scan as scan_module  # noqa: E402
from memstrata.capture.scorer import DURABLE, Model, additions  # noqa: E402
from train_capture import FOLDERS, LANGUAGES, load_corpus, train  # noqa: E402

# every author but ``original`` (the messages the rules were written from)
TEST_AUTHORS = tuple(author for author in FOLDERS if author != "original")
# the defaults before 2026-11-28 (positive weight 1, cut 0.5), which the older
# variants below were measured against, so they pin them
OLD = {"positive_weight": 1.0, "threshold": 0.5}
VARIANTS: dict[str, dict[str, Any]] = {
    "shipped": {},
    "old_defaults": {**OLD},
    "no_rule_features": {**OLD, "rule_features": False},
    "threshold_0.4": {**OLD, "threshold": 0.4},
    "threshold_0.6": {**OLD, "threshold": 0.6},
    "threshold_0.7": {**OLD, "threshold": 0.7},
    "threshold_0.8": {**OLD, "threshold": 0.8},
    "positive_weight_3": {**OLD, "positive_weight": 3.0},
    "l2_1e-3": {**OLD, "l2": 1e-3},
    "no_rule_features_0.6": {**OLD, "rule_features": False, "threshold": 0.6},
    "no_rule_features_0.7": {**OLD, "rule_features": False, "threshold": 0.7},
    "no_rule_features_0.8": {**OLD, "rule_features": False, "threshold": 0.8},
}
# the tries of 2026-11-28 with native/ (docs/capture-history.md); run them by name
TRIES: dict[str, dict[str, Any]] = {
    "positive_weight_2": {**OLD, "positive_weight": 2.0},
    "threshold_0.3": {**OLD, "threshold": 0.3},
    "no_rule_features_pw2": {**OLD, "rule_features": False, "positive_weight": 2.0},
    "min_count_1": {**OLD, "min_count": 1},
    "steps_600": {**OLD, "steps": 600},
    "pw2_0.6": {"positive_weight": 2.0, "threshold": 0.6},
    "pw3_0.7": {"positive_weight": 3.0, "threshold": 0.7},
    "pw2_0.65": {"positive_weight": 2.0, "threshold": 0.65},
    # the tries with native2/ and generated2/ (docs/capture-history.md); "pw2_0.6" (the
    # shipped setting before them), "pw3_0.7" and "pw2_0.65" (shipped since) above
    "pw2_0.55": {"positive_weight": 2.0, "threshold": 0.55},
    "pw2_0.7": {"positive_weight": 2.0, "threshold": 0.7},
    "pw2_0.75": {"positive_weight": 2.0, "threshold": 0.75},
    "pw1.5_0.6": {"positive_weight": 1.5, "threshold": 0.6},
    "pw3_0.6": {"positive_weight": 3.0, "threshold": 0.6},
    "pw1.5_0.55": {"positive_weight": 1.5, "threshold": 0.55},
    "pw1.5_0.65": {"positive_weight": 1.5, "threshold": 0.65},
    "pw2.5_0.65": {"positive_weight": 2.5, "threshold": 0.65},
    "pw2.5_0.7": {"positive_weight": 2.5, "threshold": 0.7},
    "pw3_0.75": {"positive_weight": 3.0, "threshold": 0.75},
    "pw4_0.8": {"positive_weight": 4.0, "threshold": 0.8},
    "pw2_0.65_l2_3e-5": {"positive_weight": 2.0, "threshold": 0.65, "l2": 3e-5},
    "pw2_0.65_l2_3e-4": {"positive_weight": 2.0, "threshold": 0.65, "l2": 3e-4},
    "pw2_0.65_steps_200": {"positive_weight": 2.0, "threshold": 0.65, "steps": 200},
    "pw2_0.65_steps_450": {"positive_weight": 2.0, "threshold": 0.65, "steps": 450},
    "pw2_0.7_steps_150": {"positive_weight": 2.0, "threshold": 0.7, "steps": 150},
    "pw2_0.7_steps_200": {"positive_weight": 2.0, "threshold": 0.7, "steps": 200},
    "pw2_0.7_steps_250": {"positive_weight": 2.0, "threshold": 0.7, "steps": 250},
    "pw2_0.75_steps_150": {"positive_weight": 2.0, "threshold": 0.75, "steps": 150},
    "pw2_0.75_steps_200": {"positive_weight": 2.0, "threshold": 0.75, "steps": 200},
    # round 3 (native3/): fewer feature names, for the scorer's speed
    "pw2_0.65_min_count_3": {"positive_weight": 2.0, "threshold": 0.65, "min_count": 3},
    "pw2_0.65_no_prune": {"positive_weight": 2.0, "threshold": 0.65, "prune": 0.0},
    "pw2_0.65_prune_0.01": {"positive_weight": 2.0, "threshold": 0.65, "prune": 0.01},
    "pw2_0.65_prune_0.02": {"positive_weight": 2.0, "threshold": 0.65, "prune": 0.02},
    "pw2_0.65_prune_0.05": {"positive_weight": 2.0, "threshold": 0.65, "prune": 0.05},
    "pw2_0.65_prune_0.1": {"positive_weight": 2.0, "threshold": 0.65, "prune": 0.1},
    # round 4 (native4/): a cut between the shipped 0.65 and 0.7
    "pw2_0.675": {"positive_weight": 2.0, "threshold": 0.675},
    "pw2_0.66": {"positive_weight": 2.0, "threshold": 0.66},
}

Counts = dict[str, list[int]]


def prf(tp: int, fp: int, fn: int) -> dict[str, float | int]:
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return {"precision": round(p, 4), "recall": round(r, 4), "tp": tp, "fp": fp, "fn": fn}


def predict(message: dict[str, Any], model: Model | None) -> set[str]:
    """Durable categories ``scan`` finds, with ``model`` as its scorer (None: rules alone)."""
    if model is None:
        got = message["hits"]
    else:
        original = scan_module.additions
        scan_module.additions = lambda text, hits, lowered=None: additions(
            text, hits, model, lowered
        )
        try:
            got = {e.category for e in scan_module.scan(message["text"], learned=True)}
        finally:
            scan_module.additions = original
    return set(got) & set(DURABLE)


def tally(counts: dict[str, Counts], message: dict[str, Any], got: set[str], key: str) -> None:
    gold = set(message["labels"]) & set(DURABLE)
    for category in gold | got:
        slot = 0 if category in gold and category in got else 1 if category in got else 2
        for name in ("overall", f"lang:{message['lang']}", f"cat:{category}"):
            counts[key].setdefault(name, [0, 0, 0])[slot] += 1


def report(table: Counts) -> dict[str, Any]:
    return {
        "overall": prf(*table.get("overall", [0, 0, 0])),
        "by_language": {lang: prf(*table.get(f"lang:{lang}", [0, 0, 0])) for lang in LANGUAGES},
        "by_category": {cat: prf(*table.get(f"cat:{cat}", [0, 0, 0])) for cat in DURABLE},
    }


def as_model(trained: Any) -> Model:
    return Model(
        trained.names,
        trained.weights.tolist(),
        trained.rules.tolist(),
        trained.bias.tolist(),
        trained.threshold,
    )


def cross_validate(
    messages: list[dict[str, Any]], options: dict[str, Any], apart: Collection[str] = ()
) -> dict[str, Any]:
    """Both cross-validations of ``options``. The messages of the authors in
    ``apart`` are trained on and held out like the others but also left out
    of the ``common/...`` tables, so that figures over the same test messages
    compare across corpora (``--without`` one of them, ``--apart`` the same)."""
    counts: dict[str, Counts] = defaultdict(dict)
    for author in TEST_AUTHORS:
        model = as_model(train([m for m in messages if m["author"] != author], **options))
        for message in (m for m in messages if m["author"] == author):
            for key, chosen in (("rules", None), ("scorer", model)):
                got = predict(message, chosen)
                tally(counts, message, got, f"author/{key}")
                tally(counts, message, got, f"author:{author}/{key}")
                if apart and author not in apart:
                    tally(counts, message, got, f"common/author/{key}")
    for lang in LANGUAGES:
        model = as_model(train([m for m in messages if m["lang"] != lang], **options))
        for message in (m for m in messages if m["lang"] == lang and m["author"] != "original"):
            for key, chosen in (("rules", None), ("scorer", model)):
                got = predict(message, chosen)
                tally(counts, message, got, f"language/{key}")
                tally(counts, message, got, f"language:{message['author']}/{key}")
                if apart and message["author"] not in apart:
                    tally(counts, message, got, f"common/language/{key}")
    return {key: report(table) for key, table in sorted(counts.items())}


def timing(messages: list[dict[str, Any]], repeat: int) -> dict[str, Any]:
    texts = [m["text"] for m in messages if m["lang"] in ("en", "uz")]
    long_texts = [" ".join(texts[start:])[:200] for start in range(0, 200, 5)]
    out = {}
    for key, learned in (("rules", False), ("rules_and_scorer", True)):
        costs = sorted(
            min(
                timeit.repeat(
                    lambda t=t, on=learned: scan_module.scan(t, learned=on),
                    number=200,
                    repeat=repeat,
                )
            )
            / 200
            * 1e6
            for t in long_texts
        )
        out[key] = {
            "p50": round(statistics.median(costs), 2),
            "p99": round(costs[int(len(costs) * 0.99) - 1], 2),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument(
        "--variants", nargs="*", default=list(VARIANTS), choices=[*VARIANTS, *TRIES]
    )
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--without",
        nargs="*",
        default=[],
        choices=TEST_AUTHORS,
        help="leave these authors out of the corpus (to measure what adding them did)",
    )
    parser.add_argument(
        "--apart",
        nargs="*",
        default=[],
        choices=TEST_AUTHORS,
        help="also report (common/...) the folds and messages of every other author",
    )
    args = parser.parse_args(argv)
    messages = [m for m in load_corpus() if m["author"] not in args.without]
    groups: dict[str, int] = defaultdict(int)
    for message in messages:
        groups[f"{message['author']}/{message['lang']}"] += 1
    results: dict[str, Any] = {"messages": dict(sorted(groups.items())), "variants": {}}
    for name in args.variants:
        results["variants"][name] = cross_validate(
            messages, {**VARIANTS, **TRIES}[name], args.apart
        )
        shown = results["variants"][name]
        print(
            name,
            json.dumps(
                {
                    k: v["overall"]
                    for k, v in shown.items()
                    if ":" not in k and k.count("/") == 1 + k.startswith("common/")
                }
            ),
            flush=True,
        )
    if args.repeat:
        results["timing_us_per_200_chars"] = timing(messages, args.repeat)
    text = json.dumps(results, indent=2, ensure_ascii=False)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n", encoding="utf-8")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
