"""Check unseen3: lines parse, ids unique, labels sorted and allowed; print counts."""

import collections
import json
import pathlib
import sys

ALLOWED = {"correction", "proper_noun", "preference", "decision", "specific_value", "remember"}
LANGUAGES = ("en", "uz", "ru", "zh")


def check(root: pathlib.Path) -> bool:
    ids: set[str] = set()
    texts: set[str] = set()
    good = True
    for lang in LANGUAGES:
        lines = (root / f"{lang}.jsonl").read_text(encoding="utf-8").splitlines()
        messages = [json.loads(line) for line in lines]
        cats: collections.Counter[str] = collections.Counter()
        for i, m in enumerate(messages, 1):
            if set(m) != {"id", "lang", "author", "text", "labels", "why"}:
                raise ValueError(m)
            if m["id"] != f"{lang}-t{i:03d}" or m["id"] in ids or m["text"] in texts:
                raise ValueError(m)
            if m["lang"] != lang or m["author"] != "unseen3" or not m["text"] or not m["why"]:
                raise ValueError(m)
            if m["labels"] != sorted(set(m["labels"])) or not set(m["labels"]) <= ALLOWED:
                raise ValueError(m)
            ids.add(m["id"])
            texts.add(m["text"])
            cats.update(m["labels"])
        pos = sum(bool(m["labels"]) for m in messages)
        share = pos / len(messages)
        per = ", ".join(f"{c} {cats[c]}" for c in sorted(ALLOWED))
        print(f"{lang}: {len(messages)} messages, {pos} labelled ({share:.0%}); {per}")
        good = good and len(messages) == 150 and min(cats[c] for c in ALLOWED) >= 15
    return good


if __name__ == "__main__":
    here = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).parent
    sys.exit(0 if check(here) else 1)
