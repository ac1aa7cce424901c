"""Grow the capture corpus with template paraphrases (author "template").

The rules in ``capture/rules`` were written from the original corpus; these
messages are written by another method: sentence templates per language and
category, crossed with vocabularies (names, teams, tools, tasks…), drawn with a
fixed seed. Hard negatives are templated too (questions, hypotheticals, third
parties, nostalgia, meta talk about the conversation). The output is
``tests/data/capture/generated/{lang}.jsonl``, deterministic: running the
script again writes the same bytes (a test checks it).

Run::

    .venv/bin/python bench/gen_capture_corpus.py
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "capture" / "generated"
SEED = 17
PER_TEMPLATE = 4

VOCAB: dict[str, dict[str, list[str]]] = {
    "en": {
        "name": ["Dilnoza", "Marcus", "Aiko", "Timur", "Priya", "Oleg", "Fatima", "Lucas"],
        "team": ["payments", "billing", "search", "mobile", "infra", "data"],
        "tool": ["Postgres", "Redis", "Kafka", "FastAPI", "Django", "Terraform", "Vue", "Rust"],
        "thing": ["tabs", "dark mode", "short answers", "bullet lists", "plain English"],
        "scope": ["all examples", "every reply", "all code snippets", "the docs"],
        "task": [
            "renew the TLS certificate",
            "email the landlord",
            "rotate the logs",
            "call the bank",
            "back up the laptop",
            "pay the invoice",
        ],
        "pet": ["Rex", "Mochi", "Luna", "Barsik"],
        "place": ["Tashkent", "Lisbon", "Almaty", "Osaka"],
        "person": ["my manager", "my colleague", "Sam", "the client"],
    },
    "uz": {
        "name": ["Dilnoza", "Jasur", "Malika", "Timur", "Sevara", "Otabek", "Nilufar", "Bekzod"],
        "team": ["to'lovlar", "qidiruv", "mobil", "infra", "ma'lumotlar"],
        "tool": ["Postgres", "Redis", "Kafka", "FastAPI", "Django", "Terraform", "Vue", "Rust"],
        "thing": ["qisqa javoblar", "qorong'i rejim", "ro'yxatlar", "oddiy til"],
        "scope": ["barcha misollarda", "har bir javobda", "hamma kodda"],
        "task": [
            "sertifikatni yangilash",
            "uy egasiga xat yozish",
            "bankka qo'ng'iroq qilish",
            "noutbukni zaxiralash",
            "hisobni to'lash",
        ],
        "pet": ["Rex", "Mosh", "Laylo", "Barsik"],
        "place": ["Toshkent", "Samarqand", "Buxoro", "Namangan"],
        "person": ["rahbarim", "hamkasbim", "Sardor", "mijoz"],
    },
    "ru": {
        "name": ["Дильноза", "Марк", "Ирина", "Тимур", "Ольга", "Павел", "Наталья", "Егор"],
        "team": ["платежей", "поиска", "мобильной разработки", "инфраструктуры", "данных"],
        "tool": ["Postgres", "Redis", "Kafka", "FastAPI", "Django", "Terraform", "Vue", "Rust"],
        "thing": ["короткие ответы", "тёмную тему", "списки", "простой язык"],
        "scope": ["во всех примерах", "в каждом ответе", "во всём коде"],
        "task": [
            "продлить сертификат",
            "написать арендодателю",
            "позвонить в банк",
            "сделать бэкап ноутбука",
            "оплатить счёт",
        ],
        "pet": ["Рекс", "Мурка", "Луна", "Барсик"],
        "place": ["Москве", "Казани", "Ташкенте", "Новосибирске"],
        "person": ["мой начальник", "коллега", "Саша", "клиент"],
    },
    "zh": {
        "name": ["李明", "王芳", "张伟", "陈静", "刘洋", "赵磊", "孙丽", "周杰"],
        "team": ["支付", "搜索", "移动端", "基础设施", "数据"],
        "tool": ["Postgres", "Redis", "Kafka", "FastAPI", "Django", "Terraform", "Vue", "Rust"],
        "thing": ["简短的回答", "深色模式", "列表", "简单的中文"],
        "scope": ["所有例子里", "每次回答里", "所有代码里"],
        "task": ["续签证书", "给房东发邮件", "给银行打电话", "备份电脑", "付账单"],
        "pet": ["旺财", "咪咪", "豆豆", "小白"],
        "place": ["北京", "上海", "成都", "杭州"],
        "person": ["我老板", "同事", "小王", "客户"],
    },
}

# (labels, why, template). Templates use {slot} and {slot2} (a second, different value).
Template = tuple[tuple[str, ...], str, str]

TEMPLATES: dict[str, list[Template]] = {
    "en": [
        (
            ("proper_noun",),
            "introduction without 'my name is'",
            "hey, this is {name} from the {team} team",
        ),
        (("proper_noun",), "introduction", "{name} here, I lead {team}"),
        (("proper_noun",), "pet's name", "our cat is called {pet}"),
        (("preference",), "instruction-shaped preference", "please use {tool} in {scope}"),
        (("preference",), "lasting wish", "from now on I'd rather get {thing}"),
        (("preference",), "dislike", "I really can't stand {thing}, avoid it"),
        (("decision",), "picking an option", "ok, we're picking {tool} over {tool2}"),
        (("decision",), "trying one thing first", "we'll try {tool} first and see"),
        (("decision",), "choice made", "final call: the backend goes on {tool}"),
        (("remember",), "note for later", "note for later: {task}"),
        (("remember",), "don't forget + verb", "don't forget to {task} tonight"),
        (
            ("proper_noun", "remember"),
            "keep in mind + own place",
            "keep in mind that I live in {place}",
        ),
        (("correction",), "not X, but Y", "not {tool2}, but {tool} — I misspoke"),
        (("correction",), "I meant", "sorry, I meant {tool}, not {tool2}"),
        (
            ("correction", "proper_noun"),
            "corrects own name",
            "sorry, it's {name} not {name2}, that's my name",
        ),
        ((), "question about a preference", "would you use {tool} or {tool2} here?"),
        ((), "hypothetical", "if we picked {tool}, what would break?"),
        ((), "third party's preference", "{person} prefers {thing}, not me"),
        ((), "nostalgia", "I remember when we first tried {tool}, good times"),
        ((), "meta talk", "let's do a recap of what we said about {tool}"),
        ((), "undecided", "maybe {tool}, maybe {tool2}, no idea yet"),
        ((), "question about a name", "what was the name of {person} again?"),
        ((), "one-off request", "show me an example with {tool}"),
    ],
    "uz": [
        (("proper_noun",), "introduction", "salom, bu {name}, {team} jamoasidan"),
        (("proper_noun",), "pet's name", "mushugimizning ismi {pet}"),
        (("preference",), "instruction-shaped preference", "iltimos, {scope} {tool} ishlating"),
        (("preference",), "lasting wish", "menga doim {thing} yoqadi"),
        (("decision",), "picking an option", "{tool} ni tanladik, {tool2} kerak emas"),
        (("decision",), "trying one thing first", "avval {tool} ni sinab ko'ramiz"),
        (("decision",), "choice made", "qaror qildik: backend {tool} da bo'ladi"),
        (("remember",), "don't forget + verb", "{task}ni unutma"),
        (
            ("proper_noun", "remember"),
            "keep in mind + own place",
            "yodda tut, men {place}da yashayman",
        ),
        (("correction",), "not X, but Y", "{tool2} emas, {tool} demoqchi edim"),
        (("correction", "proper_noun"), "corrects own name", "yo'q, ismim {name}, {name2} emas"),
        ((), "question", "{tool} yoki {tool2} yaxshimi?"),
        ((), "hypothetical", "agar {tool} ni tanlasak nima bo'ladi?"),
        ((), "third party's preference", "{person} {thing}ni yaxshi ko'radi"),
        ((), "nostalgia", "{tool} ni birinchi marta sinaganimizni eslayman"),
        ((), "meta talk", "keling, {tool} haqida gaplashganlarimizni xulosa qilamiz"),
        ((), "undecided", "{tool} yoki {tool2}, hali bilmayman"),
        ((), "one-off request", "{tool} bilan misol ko'rsat"),
    ],
    "ru": [
        (
            ("proper_noun",),
            "introduction without 'меня зовут'",
            "привет, это {name} из команды {team}",
        ),
        (("proper_noun",), "pet's name", "нашего кота зовут {pet}"),
        (("preference",), "instruction-shaped preference", "пожалуйста, используй {tool} {scope}"),
        (("preference",), "lasting wish", "мне больше нравятся {thing}"),
        (("decision",), "picking an option", "выбираем {tool}, {tool2} отпадает"),
        (("decision",), "trying one thing first", "сначала попробуем {tool}"),
        (("decision",), "choice made", "решено: бэкенд будет на {tool}"),
        (("remember",), "note for later", "заметка на потом: {task}"),
        (("remember",), "don't forget + verb", "не забудь {task} сегодня вечером"),
        (("correction",), "not X, but Y", "не {tool2}, а {tool}, я оговорился"),
        (("correction", "proper_noun"), "corrects own name", "нет, меня зовут {name}, не {name2}"),
        ((), "question", "что лучше, {tool} или {tool2}?"),
        ((), "hypothetical", "если бы мы выбрали {tool}, что бы сломалось?"),
        ((), "third party's preference", "{person} любит {thing}, а я нет"),
        ((), "nostalgia", "помню, как мы впервые пробовали {tool}"),
        ((), "meta talk", "давай подведём итог того, что мы говорили про {tool}"),
        ((), "undecided", "может {tool}, может {tool2}, пока не знаю"),
        ((), "one-off request", "покажи пример с {tool}"),
    ],
    "zh": [
        (("proper_noun",), "introduction", "你好，我是{team}组的{name}"),
        (("proper_noun",), "pet's name", "我家的猫叫{pet}"),
        (("preference",), "instruction-shaped preference", "请在{scope}都用{tool}"),
        (("preference",), "lasting wish", "我比较喜欢{thing}"),
        (("decision",), "picking an option", "我们选{tool}，不用{tool2}了"),
        (("decision",), "trying one thing first", "先试试{tool}吧，就这么定了"),
        (("decision",), "choice made", "定了，后端用{tool}"),
        (("remember",), "note for later", "记一下：{task}"),
        (("remember",), "don't forget + verb", "别忘了今晚{task}"),
        (("correction",), "not X, but Y", "不是{tool2}，是{tool}，我说错了"),
        (("correction", "proper_noun"), "corrects own name", "不对，我叫{name}，不是{name2}"),
        ((), "question", "{tool}和{tool2}哪个好？"),
        ((), "hypothetical", "如果我们用{tool}会怎么样"),
        ((), "third party's preference", "{person}喜欢{thing}，我无所谓"),
        ((), "nostalgia", "我记得我们第一次用{tool}的时候"),
        ((), "meta talk", "我们来总结一下刚才关于{tool}的讨论"),
        ((), "undecided", "用{tool}还是{tool2}，还没想好"),
        ((), "one-off request", "给我看一个{tool}的例子"),
    ],
}


def _fill(template: str, vocab: dict[str, list[str]], rng: random.Random) -> str:
    values: dict[str, str] = {}
    for slot, words in vocab.items():
        first, second = rng.sample(words, 2)
        values[slot], values[f"{slot}2"] = first, second
    return template.format(**values)


def generate(lang: str) -> list[dict[str, object]]:
    """The template messages of one language, in a fixed order."""
    rng = random.Random(f"{SEED}-{lang}")
    seen: set[str] = set()
    out: list[dict[str, object]] = []
    for labels, why, template in TEMPLATES[lang]:
        made = 0
        for _ in range(PER_TEMPLATE * 4):
            text = _fill(template, VOCAB[lang], rng)
            if text in seen or made == PER_TEMPLATE:
                continue
            seen.add(text)
            made += 1
            out.append(
                {
                    "id": f"{lang}-t{len(out) + 1:03d}",
                    "lang": lang,
                    "author": "template",
                    "text": text,
                    "labels": sorted(labels),
                    "why": why,
                }
            )
    return out


def render(lang: str) -> str:
    return "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in generate(lang))


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for lang in TEMPLATES:
        (OUT / f"{lang}.jsonl").write_text(render(lang), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
