"""Re-check the unseen4 held-out files and print their counts.

Run: python tests/data/capture/unseen4/check.py
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
LANGUAGES = ("en", "uz", "ru", "zh")
KEYS = ["id", "lang", "author", "text", "labels", "why"]
CATEGORIES = (
    "correction",
    "decision",
    "preference",
    "proper_noun",
    "remember",
    "specific_value",
)
AUTHOR = "unseen4"


def check(lang: str) -> tuple[Counter[str], list[str]]:
    """Count one language's file; return (counts, problems)."""
    counts: Counter[str] = Counter()
    problems: list[str] = []
    ids: set[str] = set()
    texts: set[str] = set()
    path = HERE / f"{lang}.jsonl"
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        where = f"{path.name}:{number}"
        try:
            message = json.loads(line)
        except json.JSONDecodeError as error:
            problems.append(f"{where}: not JSON ({error})")
            continue
        if list(message) != KEYS:
            problems.append(f"{where}: keys {list(message)}")
            continue
        if message["lang"] != lang or message["author"] != AUTHOR:
            problems.append(f"{where}: lang or author wrong")
        if not message["id"].startswith(f"{lang}-u4-") or message["id"] in ids:
            problems.append(f"{where}: id {message['id']!r} malformed or repeated")
        ids.add(message["id"])
        if not isinstance(message["text"], str) or not message["text"].strip():
            problems.append(f"{where}: empty text")
        elif message["text"] in texts:
            problems.append(f"{where}: text repeated")
        texts.add(message["text"])
        labels = message["labels"]
        if labels != sorted(set(labels)) or not set(labels) <= set(CATEGORIES):
            problems.append(f"{where}: labels {labels} not sorted, repeated or unknown")
        if not isinstance(message["why"], str) or not message["why"].strip():
            problems.append(f"{where}: empty why")
        counts["messages"] += 1
        counts["positive" if labels else "negative"] += 1
        counts.update(labels)
    return counts, problems


def main() -> int:
    columns = ("messages", "positive", "negative", *CATEGORIES)
    rows = {}
    problems: list[str] = []
    for lang in LANGUAGES:
        rows[lang], found = check(lang)
        problems += found
    width = max(len(column) for column in columns)
    print(f"{'':<{width}}  " + "  ".join(f"{lang:>5}" for lang in LANGUAGES))
    for column in columns:
        print(f"{column:<{width}}  " + "  ".join(f"{rows[lang][column]:>5}" for lang in LANGUAGES))
    for problem in problems:
        print(problem, file=sys.stderr)
    print("ok" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
