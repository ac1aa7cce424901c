"""Grow the capture corpus with template paraphrases (author "template").

The rules in ``capture/rules`` were written from the original corpus; these
messages are written by another method: sentence templates per language and
category, crossed with vocabularies (names, teams, tools, tasks…), drawn with a
fixed seed. Hard negatives are templated too (questions, hypotheticals, third
parties, nostalgia, meta talk about the conversation). The output is
``tests/data/capture/generated/{lang}.jsonl``, deterministic: running the
script again writes the same bytes (a test checks it). A second set
(``TEMPLATES2``, ``VOCAB2``: the paraphrase families issue 17 still misses and
the same facts as hard negatives) writes ``generated2/`` (author "template2"),
a third (``TEMPLATES3``, ``VOCAB3``: names in the frames people give them in,
decisions told as done, "no X, ever") ``generated3/`` (author "template3").

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


# The second set (issue 17, 2026-11-28): the paraphrase families the rules miss,
# each crossed with the same facts as hard negatives (question, hypothetical,
# reported speech, meta talk, nostalgia, one-off). Written before measuring
# anything on it; output ``generated2/``, author "template2".
VOCAB2: dict[str, dict[str, list[str]]] = {
    "en": {
        "name": ["Ravi", "Margo", "Kwame", "Lena", "Tuck", "Ines", "Hiro", "Bex"],
        "role": ["frontend", "the data team", "QA", "ops", "design", "support"],
        "rel": ["wife", "husband", "manager", "cofounder", "sister", "son"],
        "pet": ["Pickles", "Biscuit", "Nori", "Rocket"],
        "opt": ["Postgres", "Hetzner", "Svelte", "option B", "the yearly plan", "Vercel"],
        "topic": ["hosting", "the database", "the frontend", "the queue", "pricing"],
        "instr": [
            "keep answers short",
            "use metric units",
            "skip the emojis",
            "show the command first",
            "answer in Spanish",
            "use bullet points",
        ],
        "habit": [
            "take the train rather than fly",
            "work late at night",
            "drink my coffee black",
            "write my notes in markdown",
        ],
        "fact": [
            "the wifi password is on the fridge",
            "the side gate code is 7730",
            "rent is due on the 1st",
            "the vpn config lives in ~/vpn",
            "invoice numbers start with INV-2026",
        ],
        "day": ["Monday", "Tuesday", "Thursday", "Friday"],
        "time": ["3pm", "4pm", "10am", "11am"],
        "person": ["my boss", "Anya", "the client", "my brother", "Tom"],
    },
    "uz": {
        "name": ["Jasur", "Ziyoda", "Farrux", "Kamola", "Sherzod", "Nilufar"],
        "role": ["frontend", "marketing", "QA", "moliya", "infra"],
        "rel": ["akam", "singlim", "rahbarim", "turmush o'rtog'im", "o'g'lim"],
        "pet": ["Paxmoq", "Bo'ri", "Momiq", "Tuzik"],
        "opt": ["Postgres", "Hetzner", "Svelte", "Vercel", "SQLite", "ikkinchi variant"],
        "topic": ["hosting", "baza", "frontend", "navbat", "narxlar"],
        "instr": [
            "javoblarni qisqa qiling",
            "metr birligida yozing",
            "emoji ishlatmang",
            "avval buyruqni ko'rsating",
            "o'zbekcha javob bering",
            "ro'yxat shaklida yozing",
        ],
        "habit": [
            "poyezdda yuraman",
            "kechasi ishlayman",
            "qahvani shakarsiz ichaman",
            "eslatmalarni markdownda yozaman",
        ],
        "fact": [
            "wifi paroli muzlatgich ustida",
            "yon darvoza kodi 7730",
            "ijara har oyning 1-sanasida to'lanadi",
            "VPN sozlamasi ~/vpn papkasida",
            "hisob raqamlari INV-2026 bilan boshlanadi",
        ],
        "day": ["dushanba", "seshanba", "payshanba", "juma"],
        "time": ["soat 3", "soat 4", "soat 10", "soat 11"],
        "person": ["rahbarim", "Anvar", "mijoz", "akam", "Tolib"],
    },
    "ru": {
        "name": ["Глеб", "Ульяна", "Тимур", "Вика", "Арсений", "Лида"],
        "role": ["фронтенд", "маркетинг", "QA", "финансы", "инфра"],
        "pet": ["Бублик", "Граф", "Пуша", "Марс"],
        "opt": ["Postgres", "Hetzner", "Svelte", "Vercel", "SQLite", "Kafka"],
        "topic": ["хостинга", "базы", "фронтенда", "очередей"],
        "instr": [
            "отвечай коротко",
            "пиши в метрических единицах",
            "обходись без смайликов",
            "сначала давай команду",
            "отвечай по-русски",
            "оформляй списком",
        ],
        "habit": [
            "езжу поездом",
            "работаю по ночам",
            "пью кофе без сахара",
            "веду заметки в markdown",
        ],
        "fact": [
            "пароль от wifi на холодильнике",
            "код от калитки 7730",
            "аренда платится 1-го числа",
            "конфиг VPN лежит в ~/vpn",
            "номера счетов начинаются с INV-2026",
        ],
        "day": ["в понедельник", "во вторник", "в четверг", "в пятницу"],
        "time": ["3", "4", "10", "11"],
        "person": ["начальник", "Аня", "клиент", "брат", "Толя"],
    },
    "zh": {
        "name": ["王丽", "陈涛", "赵磊", "小薇", "李明", "阿杰"],
        "role": ["采购部", "平台组", "测试组", "财务部", "后端组"],
        "pet": ["团子", "将军", "豆包", "雪球"],
        "opt": ["Postgres", "Hetzner", "Svelte", "Vercel", "SQLite", "第二个方案"],
        "topic": ["部署", "数据库", "前端", "消息队列"],
        "instr": [
            "回答简短点",
            "单位用公制",
            "别用表情",
            "先给命令再解释",
            "用中文回复",
            "用列表写",
        ],
        "habit": ["坐高铁出行", "晚上干活", "喝咖啡不加糖", "用markdown记笔记"],
        "fact": [
            "wifi密码写在路由器背面",
            "侧门密码是7730",
            "房租每月1号交",
            "VPN配置在~/vpn",
            "发票号以INV-2026开头",
        ],
        "day": ["周一", "周二", "周四", "周五"],
        "time": ["3点", "4点", "10点", "11点"],
        "person": ["领导", "小安", "客户", "我哥", "老张"],
    },
}

P, F, D, R, C = ("proper_noun",), ("preference",), ("decision",), ("remember",), ("correction",)
TEMPLATES2: dict[str, list[Template]] = {
    "en": [
        (P, "introduction, name then role", "{name} here, {role}"),
        (P, "quick intro", "quick intro: {name}, {role}"),
        (P, "what the user goes by", "people call me {name}, fwiw"),
        (P, "a person of the user's", "my {rel} {name} will use this account too"),
        (P, "the user's pet", "{pet} is our dog, a rescue"),
        ((), "reported speech", "{person} said her name is {name}"),
        ((), "question", "is {name} a good name for a dog?"),
        ((), "fiction", "in the show, the lead is called {name}"),
        ((), "hypothetical", "if I changed my name to {name}, would anyone notice?"),
        (F, "standing instruction", "always {instr}"),
        (F, "standing instruction", "from now on, {instr}"),
        (F, "standing instruction", "going forward {instr} please"),
        (F, "habit as a lasting preference", "I tend to {habit}"),
        (F, "habit as a lasting preference", "I usually {habit}, plan around that"),
        ((), "one-off request", "just this once, {instr}"),
        ((), "someone else's habit", "{person} likes to {instr}, not me"),
        ((), "hypothetical", "if I asked you to {instr}, could you?"),
        ((), "question", "should I {habit}?"),
        (D, "decision", "{opt} it is"),
        (D, "decision", "settled: {opt} for {topic}"),
        (D, "decision", "we're going with {opt} for {topic}"),
        (D, "trying one thing first", "we'll try {opt} first, then see"),
        (D, "decision", "ok, done deliberating: {opt}"),
        ((), "undecided question", "should we go with {opt} for {topic}?"),
        ((), "someone else's decision", "{person} decided on {opt}, not my call"),
        ((), "hypothetical", "if we went with {opt}, would it scale?"),
        ((), "undecided", "maybe {opt}, nothing final yet"),
        ((), "meta talk", "let's recap what we said about {opt}"),
        (R, "request to keep", "jot this down: {fact}"),
        (R, "for future reference", "for future reference, {fact}"),
        (R, "request to keep", "file this away: {fact}"),
        (R, "memo to self", "memo to self: {fact}"),
        (R, "keep in mind", "keep in mind {fact}"),
        ((), "question", "did I tell you {fact}?"),
        ((), "reported speech", "{person} says {fact}"),
        ((), "nostalgia", "I remember when we used {opt}, good times"),
        (C, "correction", "scratch that, the demo is on {day}, not {day2}"),
        (C, "update corrects a time", "update: the call is at {time}, not {time2}"),
        (C, "correction", "wait no, it's {day}, not {day2}"),
        (C, "correction of what was meant", "my bad, I meant {opt}, not {opt2}"),
        (C, "correction", "correction: {time}, not {time2}"),
        ((), "question", "is it {day} or {day2}?"),
        ((), "reported speech", "{person} said it's {day}, not {day2}"),
        ((), "retracts a question, no fact", "scratch that question about {topic}"),
    ],
    "uz": [
        (P, "introduction", "{name} bo'laman, {role}dan"),
        (P, "quick intro", "qisqacha: {name}, {role}"),
        (P, "what the user goes by", "meni {name} deb chaqirishadi"),
        (P, "a person of the user's", "{rel} {name} ham shu akkauntdan foydalanadi"),
        (P, "the user's pet", "itimizning laqabi {pet}"),
        ((), "reported speech", "{person} uning ismi {name} ekanini aytdi"),
        ((), "question", "{name} itga yaxshi ismmi?"),
        ((), "fiction", "kinoda bosh qahramonning ismi {name}"),
        ((), "hypothetical", "agar ismim {name} bo'lganida nima bo'lardi?"),
        (F, "standing instruction", "doim {instr}"),
        (F, "standing instruction", "bundan buyon {instr}"),
        (F, "standing instruction", "har safar {instr}, iltimos"),
        (F, "habit as a lasting preference", "odatda {habit}"),
        (F, "habit as a lasting preference", "men doim {habit}, shuni hisobga oling"),
        ((), "one-off request", "faqat shu safar {instr}"),
        ((), "hypothetical", 'agar "{instr}" desam, eslab qolasizmi?'),
        (D, "decision", "{opt}da to'xtadik"),
        (D, "decision agreed", "kelishdik: {topic} uchun {opt}"),
        (D, "trying one thing first", "avval {opt}ni sinab ko'ramiz, keyin qaraymiz"),
        (D, "decision", "{opt}ni tanladik, gap tamom"),
        (D, "decision", "mayli, {opt} bo'lsin"),
        ((), "undecided question", "{topic} uchun {opt}ni tanlasak bo'ladimi?"),
        ((), "someone else's decision", "{person} {opt}ni tanlashga qaror qilibdi"),
        ((), "hypothetical", "agar {opt}ni olsak, yetadimi?"),
        ((), "undecided", "balki {opt}, hali aniq emas"),
        ((), "meta talk", "keling, {opt} bo'yicha gaplarimizni xulosa qilaylik"),
        (R, "request to keep", "yozib qo'ying: {fact}"),
        (R, "for later", "keyinroq uchun: {fact}"),
        (R, "request to keep", "qayd qilib qo'ying: {fact}"),
        (R, "keep in mind", "esingizda bo'lsin, {fact}"),
        (R, "request to keep", "eslab qoling, {fact}"),
        ((), "question", "{fact}, deb aytganmidim sizga?"),
        ((), "reported speech", "{person} aytishicha, {fact}"),
        ((), "nostalgia", "{opt} ishlatgan paytlarimizni eslayman"),
        (C, "correction", "yo'q, demo {day} kuni, {day2} emas"),
        (C, "update corrects a time", "o'zgarish: qo'ng'iroq {time}da, {time2}da emas"),
        (C, "correction of what was meant", "adashibman, {opt}, {opt2} emas"),
        (C, "correction", "aniqrog'i, {day2} emas, {day}"),
        ((), "question", "{day} kunimi yoki {day2}mi?"),
        ((), "reported speech", "{person} demo {day} kuni, {day2} emas deyapti"),
    ],
    "ru": [
        (P, "introduction", "на связи {name}, {role}"),
        (P, "quick intro", "коротко о себе: {name}, {role}"),
        (P, "what the user goes by", "меня все зовут {name}"),
        (P, "a person of the user's", "со мной работает {name}, тоже будет писать сюда"),
        (P, "the user's pet", "пса нашего зовут {pet}"),
        ((), "reported speech", "{person} говорит, что его зовут {name}"),
        ((), "question", "{name} — нормальное имя для собаки?"),
        ((), "fiction", "в сериале главного героя зовут {name}"),
        ((), "hypothetical", "если бы меня звали {name}, что бы изменилось?"),
        (F, "standing instruction", "всегда {instr}"),
        (F, "standing instruction", "впредь {instr}"),
        (F, "standing instruction", "{instr}, и так каждый раз"),
        (F, "habit as a lasting preference", "обычно я {habit}"),
        (F, "habit as a lasting preference", "я всегда {habit}, учитывай это"),
        ((), "one-off request", "только в этот раз {instr}"),
        ((), "hypothetical", "а если я скажу «{instr}», ты запомнишь?"),
        (D, "decision", "остановились на {opt}"),
        (D, "decision agreed", "договорились: для {topic} берём {opt}"),
        (D, "trying one thing first", "сначала попробуем {opt}, потом посмотрим"),
        (D, "decision", "берём {opt}, вопрос закрыт"),
        (D, "decision", "ладно, пусть будет {opt}"),
        ((), "undecided question", "для {topic} брать {opt}?"),
        ((), "someone else's decision", "{person} решил взять {opt}, это не моё решение"),
        ((), "hypothetical", "если возьмём {opt}, потянет?"),
        ((), "undecided", "может, {opt}, но пока не решили"),
        ((), "meta talk", "давай подведём итоги по {opt}"),
        (R, "request to keep", "запиши себе: {fact}"),
        (R, "for future reference", "на будущее: {fact}"),
        (R, "request to keep", "зафиксируй: {fact}"),
        (R, "keep in mind", "имей в виду, {fact}"),
        (R, "request to keep", "отметь где-нибудь: {fact}"),
        ((), "question", "я говорил, что {fact}?"),
        ((), "reported speech", "{person} говорит, что {fact}"),
        ((), "nostalgia", "помню, как мы сидели на {opt}, хорошее было время"),
        (C, "correction", "нет, демо {day}, а не {day2}"),
        (C, "update corrects a time", "апдейт: созвон в {time}, а не в {time2}"),
        (C, "correction of what was meant", "я перепутал, у нас {opt}, а не {opt2}"),
        (C, "correction", "точнее, не {day2}, а {day}"),
        ((), "question", "{day} или {day2}?"),
        ((), "reported speech", "{person} говорит, что {day}, а не {day2}"),
        ((), "retracts a question, no fact", "забудь вопрос про {opt}, неважно"),
    ],
    "zh": [
        (P, "introduction", "{role}的{name}，有个问题"),
        (P, "quick intro", "简单介绍下：{name}，{role}"),
        (P, "what the user goes by", "大家都叫我{name}"),
        (P, "a person of the user's", "跟我一起做项目的是{name}"),
        (P, "the user's pet", "我家狗叫{pet}"),
        ((), "reported speech", "{person}说他叫{name}"),
        ((), "question", "{name}这个名字适合狗吗？"),
        ((), "fiction", "电视剧里男主叫{name}"),
        ((), "hypothetical", "如果我叫{name}会怎样？"),
        (F, "standing instruction", "以后{instr}"),
        (F, "standing instruction", "一律{instr}"),
        (F, "standing instruction", "每次都{instr}，谢谢"),
        (F, "habit as a lasting preference", "我一般{habit}"),
        (F, "habit as a lasting preference", "我习惯{habit}，安排时考虑一下"),
        ((), "one-off request", "这次{instr}就行"),
        ((), "someone else's habit", "{person}习惯{habit}"),
        ((), "hypothetical", "如果我让你{instr}，你会记住吗？"),
        (D, "decision", "最后定了{opt}"),
        (D, "decision agreed", "说好了，{topic}用{opt}"),
        (D, "trying one thing first", "先上{opt}试试"),
        (D, "decision", "就{opt}了，不讨论了"),
        (D, "decision", "行吧，{opt}"),
        ((), "undecided question", "{topic}用{opt}行吗？"),
        ((), "someone else's decision", "{person}决定用{opt}，不是我定的"),
        ((), "hypothetical", "要是用{opt}，扛得住吗？"),
        ((), "undecided", "也许{opt}吧，还没定"),
        ((), "meta talk", "我们来总结一下{opt}的讨论"),
        (R, "request to keep", "记一下：{fact}"),
        (R, "note label", "备注：{fact}"),
        (R, "request to keep", "帮我记着，{fact}"),
        (R, "request to keep", "存个档：{fact}"),
        (R, "keep in mind", "你心里有个数，{fact}"),
        ((), "question", "我跟你说过{fact}吗？"),
        ((), "reported speech", "{person}说{fact}"),
        ((), "can't remember", "不记得是不是{fact}了"),
        (C, "correction", "不对，演示是{day}，不是{day2}"),
        (C, "correction", "更正：是{time}，不是{time2}"),
        (C, "correction of what was meant", "我搞错了，用的是{opt}，不是{opt2}"),
        (C, "correction", "准确地说，不是{day2}，是{day}"),
        ((), "question", "是{day}还是{day2}？"),
        ((), "reported speech", "{person}说是{day}，不是{day2}"),
        ((), "retracts a question, no fact", "刚才那个关于{opt}的问题不用管了"),
    ],
}
# (templates, vocabularies, author, id prefix, seed suffix, templates drawn) per output folder
Set = tuple[dict[str, list[Template]], dict[str, dict[str, list[str]]], str, str, str, int]
SETS: dict[str, Set] = {
    "generated": (TEMPLATES, VOCAB, "template", "t", "", PER_TEMPLATE),
    "generated2": (TEMPLATES2, VOCAB2, "template2", "u", "-2", 3),
}


# The third set (issue 17, 2026-11-28, written after reading which native2/
# labels the scorer missed in cross-validation, so native2's fold is no longer
# blind to it): names in the frames people introduce them with (family,
# work, places, pets, projects), decisions told as done ("we took", "we moved
# to"), preferences as "only X" / "no X, ever", and the same frames as hard
# negatives. Output ``generated3/``, author "template3".
VOCAB3: dict[str, dict[str, list[str]]] = {
    "en": {
        "name": ["Aziza", "Tomasz", "Noor", "Ilse", "Kofi", "Mira", "Dario", "Yuki"],
        "rel": ["wife", "husband", "daughter", "son", "sister", "brother", "boss", "cofounder"],
        "pet": ["Waffles", "Miso", "Juniper", "Bruno", "Pepper"],
        "org": ["Northwind Labs", "Kestrel Health", "Bluefin Logistics", "Orchard & Pine"],
        "project": ["Lighthouse", "Quokka", "Ember", "Tidepool"],
        "city": ["Porto", "Tbilisi", "Leeds", "Winnipeg", "Bergen"],
        "opt": [
            "the second quote",
            "the smaller flat",
            "the annual plan",
            "Hetzner",
            "the red design",
        ],
        "thing": ["emojis", "long intros", "exclamation marks", "imperial units", "passive voice"],
    },
    "uz": {
        "name": ["Aziza", "Bobur", "Nodira", "Sanjar", "Lola", "Ulug'bek", "Dildora", "Rustam"],
        "rel": ["xotinim", "erim", "qizim", "o'g'lim", "opam", "ukam", "rahbarim", "sherigim"],
        "pet": ["Oppoq", "Qoravoy", "Mosh", "Bars", "Laylak"],
        "org": ["Ipak Yo'li Soft", "Zarafshon Med", "Orzu Logistika", "Nur Bank"],
        "project": ["Mayoq", "Chaqmoq", "Lola", "Bulut"],
        "city": ["Urganch", "Qarshi", "Navoiy", "Termiz", "Jizzax"],
        "opt": ["ikkinchi taklif", "kichikroq kvartira", "yillik tarif", "Hetzner", "qizil dizayn"],
        "thing": ["emoji", "uzun kirish", "undov belgilari", "fut va dyuym", "majhul nisbat"],
    },
    "ru": {
        "name": ["Азиза", "Томаш", "Нора", "Ильза", "Кирилл", "Мирра", "Данила", "Юлиан"],
        "rel": ["жена", "муж", "дочь", "сын", "сестра", "брат", "начальник", "партнёр"],
        "pet": ["Вафля", "Мисо", "Бруно", "Перчик", "Юнга"],
        "org": ["«Северный ветер»", "«Кестрел Мед»", "«Синий кит»", "«Сад и сосна»"],
        "project": ["Маяк", "Квокка", "Уголёк", "Прилив"],
        "city": ["Пскове", "Тбилиси", "Самаре", "Твери", "Вологде"],
        "opt": [
            "второе предложение",
            "квартиру поменьше",
            "годовой тариф",
            "Hetzner",
            "красный дизайн",
        ],
        "thing": ["смайлики", "длинные вступления", "восклицательные знаки", "дюймы", "канцелярит"],
    },
    "zh": {
        "name": ["阿兰", "志强", "晓雯", "国栋", "美玲", "子涵", "建华", "思远"],
        "rel": ["老婆", "老公", "女儿", "儿子", "姐姐", "弟弟", "领导", "合伙人"],
        "pet": ["年糕", "奶茶", "黑豆", "可乐", "布丁"],
        "org": ["北风科技", "青禾医疗", "蓝鲸物流", "松果网络"],
        "project": ["灯塔", "萤火", "潮汐", "松鼠"],
        "city": ["泉州", "洛阳", "大理", "烟台", "绍兴"],
        "opt": ["第二家报价", "小一点的房子", "年付套餐", "Hetzner", "红色方案"],
        "thing": ["表情符号", "长篇开场白", "感叹号", "英制单位", "被动句"],
    },
}
TEMPLATES3: dict[str, list[Template]] = {
    "en": [
        (P, "a person of the user's", "my {rel} {name} is joining the call later"),
        (P, "a person of the user's", "{name}, my {rel}, handles the money side"),
        (P, "the user's pet", "we got a puppy, his name is {pet}"),
        (P, "the user's employer", "I work for {org} now"),
        (P, "the user's project", "the side project is called {project}"),
        (P, "the user's place", "we moved to {city} in the spring"),
        ((), "someone else's person", "is {name} a common name where you are?"),
        ((), "reported", "my {rel} says {org} is hiring"),
        ((), "hypothetical", "if we moved to {city}, how cold would it get?"),
        ((), "question", "what should we call the project, {project} maybe?"),
        (D, "decision told as done", "we took {opt} in the end"),
        (D, "decision told as done", "went with {opt}, it was the obvious pick"),
        ((), "question", "would you take {opt}?"),
        ((), "undecided", "still weighing {opt} against {opt2}"),
        (F, "lasting dislike as an instruction", "no {thing}, ever"),
        (F, "lasting dislike", "I can't bear {thing}"),
        ((), "question", "do people still use {thing}?"),
    ],
    "uz": [
        (P, "a person of the user's", "{rel} {name} ham qo'ng'iroqqa qo'shiladi"),
        (P, "a person of the user's", "{name}, {rel}, pul masalalariga qaraydi"),
        (P, "the user's pet", "kuchuk oldik, ismi {pet}"),
        (P, "the user's employer", "hozir {org}da ishlayman"),
        (P, "the user's project", "qo'shimcha loyihamiz nomi {project}"),
        (P, "the user's place", "bahorda {city}ga ko'chib o'tdik"),
        ((), "question", "{name} degan ism sizlarda ko'p uchraydimi?"),
        ((), "reported", "{rel} {org} ishchi qidiryapti deydi"),
        ((), "hypothetical", "agar {city}ga ko'chsak, qish qanchalik sovuq bo'ladi?"),
        (D, "decision told as done", "oxiri {opt}ni oldik"),
        (D, "decision told as done", "{opt}ga to'xtaldik, eng to'g'ri tanlov edi"),
        ((), "question", "siz {opt}ni olarmidingiz?"),
        ((), "undecided", "{opt} bilan {opt2} orasida hali o'ylayapmiz"),
        (F, "lasting dislike as an instruction", "{thing} hech qachon kerak emas"),
        (F, "lasting dislike", "{thing}ni umuman yoqtirmayman"),
        ((), "question", "hozir ham {thing} ishlatishadimi?"),
    ],
    "ru": [
        (P, "a person of the user's", "у меня {rel} {name}, подключится к созвону позже"),
        (P, "a person of the user's", "за деньги у нас отвечает {name}, мой партнёр"),
        (P, "the user's pet", "мы взяли щенка, зовут {pet}"),
        (P, "the user's employer", "теперь работаю в {org}"),
        (P, "the user's project", "наш побочный проект называется {project}"),
        (P, "the user's place", "весной переехали, живём теперь в {city}"),
        ((), "question", "{name} — частое имя у вас?"),
        ((), "reported", "знакомый говорит, что {org} набирает людей"),
        ((), "hypothetical", "если бы мы жили в {city}, было бы холоднее?"),
        (D, "decision told as done", "в итоге взяли {opt}"),
        (D, "decision told as done", "выбрали {opt}, без вариантов"),
        ((), "question", "ты бы взял {opt}?"),
        ((), "undecided", "всё ещё сравниваем {opt} и {opt2}"),
        (F, "lasting dislike as an instruction", "{thing} — нет, никогда"),
        (F, "lasting dislike", "терпеть не могу {thing}"),
        ((), "question", "а {thing} ещё кто-то использует?"),
    ],
    "zh": [
        (P, "a person of the user's", "我{rel}{name}晚点也会进会议"),
        (P, "a person of the user's", "{name}是我{rel}，管钱的"),
        (P, "the user's pet", "我们新养了只小狗，叫{pet}"),
        (P, "the user's employer", "我现在在{org}上班"),
        (P, "the user's project", "我们的业余项目叫{project}"),
        (P, "the user's place", "我们春天搬到了{city}"),
        ((), "question", "{name}这个名字常见吗？"),
        ((), "reported", "我{rel}说{org}在招人"),
        ((), "hypothetical", "如果搬到{city}，冬天会很冷吗？"),
        (D, "decision told as done", "最后还是选了{opt}"),
        (D, "decision told as done", "定了{opt}，没什么好犹豫的"),
        ((), "question", "换你会选{opt}吗？"),
        ((), "undecided", "{opt}和{opt2}还在比较"),
        (F, "lasting dislike as an instruction", "永远别给我用{thing}"),
        (F, "lasting dislike", "我特别受不了{thing}"),
        ((), "question", "现在还有人用{thing}吗？"),
    ],
}
SETS["generated3"] = (TEMPLATES3, VOCAB3, "template3", "w", "-3", 3)


def _fill(template: str, vocab: dict[str, list[str]], rng: random.Random) -> str:
    values: dict[str, str] = {}
    for slot, words in vocab.items():
        first, second = rng.sample(words, 2)
        values[slot], values[f"{slot}2"] = first, second
    return template.format(**values)


def generate(lang: str, folder: str = "generated") -> list[dict[str, object]]:
    """The template messages of one language and output folder, in a fixed order."""
    templates, vocab, author, prefix, suffix, per_template = SETS[folder]
    rng = random.Random(f"{SEED}-{lang}{suffix}")
    seen: set[str] = set()
    out: list[dict[str, object]] = []
    for labels, why, template in templates[lang]:
        made = 0
        for _ in range(per_template * 4):
            text = _fill(template, vocab[lang], rng)
            if text in seen or made == per_template:
                continue
            seen.add(text)
            made += 1
            out.append(
                {
                    "id": f"{lang}-{prefix}{len(out) + 1:03d}",
                    "lang": lang,
                    "author": author,
                    "text": text,
                    "labels": sorted(labels),
                    "why": why,
                }
            )
    return out


def render(lang: str, folder: str = "generated") -> str:
    return "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in generate(lang, folder))


def main() -> int:
    for folder in SETS:
        out = OUT.parent / folder
        out.mkdir(parents=True, exist_ok=True)
        for lang in TEMPLATES:
            (out / f"{lang}.jsonl").write_text(render(lang, folder), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
