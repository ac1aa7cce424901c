"""Capture output, two source trees compared: every entry ``scan`` returns must be the same.

Each ``--src`` (a ``src`` folder holding ``memstrata``) scans the same texts in
a worker process of its own, and the driver diffs what they return (category,
text and span of every entry), with the learned scorer on and off, and with
explicit ``languages`` on a share of the texts. The texts: every message of
tests/data/capture, every LoCoMo turn when the file is there, the speed
benches' 200-character messages, and ``--random`` seeded random texts (corpus
words spliced across languages, and characters from the scripts, marks,
quotes, digits and case oddities the scanner treats apart). Exit status 1 on
any difference; ``--show N`` prints the first N of them, but never a text of
a held-out set (``train_capture.TEST_ONLY``) nor one built from them: the
random texts splice only the other texts' words, and a held-out message or a
200-character bench text (spliced from every message) is named, not shown.

Run (main's tree against this one)::

    .venv/bin/python bench/capture_equal.py --src /work/main/src src
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import subprocess
import sys
from pathlib import Path

from bench_capture import LOCOMO, corpus_texts, locomo_texts, to_200
from train_capture import TEST_ONLY

WORKER = r"""
import json, sys
from memstrata.capture.scan import scan
CHOICES = [None, ("en",), ("uz",), ("ru",), ("zh",), ("en", "ru"), ("zh", "uz", "en")]
texts = json.loads(sys.stdin.readline())
for index, text in enumerate(texts):
    languages = CHOICES[index % len(CHOICES)] if index % 3 == 0 else None
    row = []
    for learned in (True, False):
        try:
            found = scan(text, languages=languages, learned=learned)
            row.append([[e.category, e.text, list(e.span)] for e in found])
        except Exception as exc:  # both trees must fail alike
            row.append(f"{type(exc).__name__}: {exc}")
    print(json.dumps(row, ensure_ascii=False))
"""

ODD = (
    "İıſΣσςẞß‘’ʻʼ`'\"“”«»「」。！？；…\n\t  ,.!?;:-—€$¥₽£+@#%&*()[]{}<>/\\_|~^"
    "0123456789０１２３４５６７８９٣३"
)
SCRIPTS = (
    "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ   ",
    "абвгдеёжзийклмнопрстуфхцчшщъыьэюя АБВГДЕЁЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯ  ",
    "我你他她们的是在不了有人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处理府研质信",
    "ぁあいうえおかがきぎくぐけげこごさざしじすずせぜそぞただちぢっつづてでとどなにぬねのはばぱひびぴふぶぷへべぺほぼぽまみむめもゃやゅゆょよらりるれろゎわゐゑをんァアィイゥウ",
    "oʻgʻ oʻzbek tilida menga yoqadi qaror qildik eslab qol ismim",
)


def random_texts(count: int, words: list[str], seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        kind = rng.random()
        if kind < 0.5:  # corpus words spliced across languages, with odd characters
            parts = []
            for _ in range(rng.randint(1, 40)):
                parts.append(rng.choice(words))
                if rng.random() < 0.15:
                    parts.append(rng.choice(ODD))
            text = rng.choice(("", " ", "")).join(parts) if rng.random() < 0.1 else " ".join(parts)
        else:  # characters from the scripts and the marks
            pool = rng.choice(SCRIPTS) + ODD * rng.randint(0, 2)
            text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 240)))
        if rng.random() < 0.2:
            text = text.upper()
        out.append(text)
    return out


def run(src: Path, texts: list[str]) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", WORKER],
        input=json.dumps(texts) + "\n",
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(src.resolve()), "PATH": "/usr/bin:/bin"},
        check=True,
    )
    return done.stdout.splitlines()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", nargs=2, required=True, type=Path)
    parser.add_argument("--random", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--show", type=int, default=0, help="print the first N differences")
    args = parser.parse_args()
    corpus = corpus_texts()
    locomo = locomo_texts(LOCOMO)
    held_out = set(corpus_texts(TEST_ONLY))  # never shown
    open_texts = [text for text in corpus if text not in held_out] + locomo
    words = sorted({word for text in open_texts for word in text.split()})
    texts = corpus + locomo + to_200(corpus + locomo, 2000)
    bench_from, bench_to = len(corpus) + len(locomo), len(texts)
    texts += random_texts(args.random, words, args.seed)
    one, two = (run(src, texts) for src in args.src)
    assert len(one) == len(two) == len(texts), (len(one), len(two), len(texts))
    differ = [index for index, (a, b) in enumerate(zip(one, two, strict=True)) if a != b]
    for index in differ[: args.show]:
        if texts[index] in held_out:
            print("(a message of a held-out set: not shown)")
        elif bench_from <= index < bench_to:
            print(
                f"(200-character bench text {index - bench_from}: spliced from every set, hidden)"
            )
        else:
            print(json.dumps(texts[index], ensure_ascii=False))
        print(f"  {args.src[0]}: {one[index]}")
        print(f"  {args.src[1]}: {two[index]}")
    digest = hashlib.sha256("\n".join(one).encode()).hexdigest()[:16]
    captured = sum(row != "[[], []]" for row in one)
    print(
        f"{len(texts)} texts ({len(corpus)} corpus, {len(locomo)} LoCoMo, 2000 bench, "
        f"{args.random} random), {captured} with captures; outputs {digest}; "
        f"{len(differ)} differ"
    )
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
