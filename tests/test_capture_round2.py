"""Issue 17, round 2: the broader structures and vetoes in capture/rules (docs/capture-history.md).

Sentences here are in none of the corpus files. Per family, the form in each
language it exists in, and hard negatives sharing its words: a name then the
team ("Farrukh from the data side") but not "Thanks from the whole team", a
standing scope ("from here on", "впредь", "往后") but not "this time", a
choice settled on ("Postgres it is", "…da to'xtaymiz", "останавливаемся на",
"拍板") but not "as it is", a note for later ("bilib qo'ying", "к сведению:",
"心里有个数") but not "提醒我一下" (asking what was forgotten), a retraction
("scratch that", "беру свои слова назад", "当我没说"); and the vetoes for
stories, someone's opinion, quoted speech after a colon, advice.
"""

from __future__ import annotations

import pytest

from memstrata.capture.scan import scan

POS = [
    # introductions by signature, and names of the user's people
    ("hello, Dilnoza from the payments team, quick question on refunds", "proper_noun"),
    ("This is Kamol, I look after the build servers", "proper_noun"),
    ("Jamshid here.", "proper_noun"),
    ("it's Dr. Rahimova, by the way", "proper_noun"),
    ("she always calls me Lola at work", "proper_noun"),
    ("our main client is Orzu Textiles", "proper_noun"),
    ("assalomu alaykum, Nodira bo'laman, HR bo'limidan", "proper_noun"),
    ("men Bahodir, backend qilaman", "proper_noun"),
    ("meni do'stlarim Shoh deb chaqirishadi", "proper_noun"),
    ("hamkorimiz Ipak Yo'li Bank", "proper_noun"),
    ("mushugimizning oti Laylo", "proper_noun"),
    ("turmush o'rtog'im Nigora, u ham shu yerda ishlaydi", "proper_noun"),
    ("пишет Марина из бухгалтерии", "proper_noun"),
    ("Тимур, разработчик бэкенда, по поводу API", "proper_noun"),
    ("меня на работе Сашей называют", "proper_noun"),
    ("отчество у меня Ильич", "proper_noun"),
    ("заказчик у нас Альфа-Групп", "proper_noun"),
    ("кратко о себе: я Ирина, аналитик", "proper_noun"),
    ("моя коллега Вера ведёт этот проект", "proper_noun"),
    ("我这边是运营的王磊", "proper_noun"),
    ("我搭档叫阿杰", "proper_noun"),
    ("客户是Orzu公司", "proper_noun"),
    # a standing scope or manner
    ("from here on, reply in Uzbek", "preference"),
    ("keep things brief, I'm on mobile", "preference"),
    ("could you keep replies short from now on", "preference"),
    ("doim qisqa javob bering", "preference"),
    ("soddaroq tushuntiring, iltimos", "preference"),
    ("rasmiy uslubda yozsangiz yaxshi", "preference"),
    ("впредь без смайликов", "preference"),
    ("пиши мне попроще", "preference"),
    ("давайте без канцелярита", "preference"),
    ("вечно путаюсь в датах, не люблю американский формат", "preference"),
    ("往后都用简体中文回答", "preference"),
    ("注释一律用英文", "preference"),
    # a choice settled on
    ("ok, Postgres it is", "decision"),
    ("settled: we deploy on Fridays", "decision"),
    ("going with the annual plan", "decision"),
    ("uchinchi variantda to'xtaymiz", "decision"),
    ("xullas, Flutter'da yozamiz", "decision"),
    ("kelishib oldik, uchrashuv har dushanba", "decision"),
    ("останавливаемся на Postgres", "decision"),
    ("那就选第一个", "decision"),
    ("先上Redis试一下", "decision"),
    ("这事儿拍板了", "decision"),
    # a note for later
    ("bilib qo'ying, ombor kaliti qorovulda", "remember"),
    ("к сведению: офис закрыт по пятницам", "remember"),
    ("心里有个数：周五要交报告", "remember"),
    ("回头提醒我给妈妈打电话", "remember"),
    # retractions and "I meant X, not Y"
    ("scratch that, the budget owner is Aziz", "correction"),
    ("I meant the staging bucket, not the prod one", "correction"),
    ("xato yozibman, manzil Chilonzor emas, Yunusobod", "correction"),
    ("беру свои слова назад, релиз в среду", "correction"),
    ("当我没说，用MySQL", "correction"),
    ("不对不对，我说的是测试环境", "correction"),
    # round 2b: the same families, wider
    ("hello there, it's Sevara, I own the mobile app", "proper_noun"),
    ("you can address me as Madam Chair", "proper_noun"),
    ("my nephew Timur starts here on Monday", "proper_noun"),
    ("always round prices whenever you quote them", "preference"),
    ("we finally landed on Vite for the build", "decision"),
    ("make sure you remember my badge number is on file", "remember"),
    ("onamni hamma Opajon deb ataydi", "proper_noun"),
    ("esingizda bo'lsin, kalit qorovulda", "remember"),
    ("yaxshi, Flutter'ni tanlaymiz", "decision"),
    ("хорошо, оставляем Jenkins", "decision"),
    ("здравствуйте, на связи Лола, бухгалтерия", "proper_noun"),
    ("我是产品那边的小雨", "proper_noun"),
    ("提醒的时候都带上日期", "preference"),
    ("好，就这个方案了", "decision"),
    ("我外婆叫秀兰", "proper_noun"),
]
NEG = [
    "Thanks from the whole team!",
    "Click here.",
    "as it is, the build is fine",
    "I think it is.",
    "keep it short for now",
    "in my story the villain says from now on he rules",
    "can I keep the old config from now on",
    "the client is happy with it",
    "Xursand bo'laman, rahmat!",
    "bu safar qisqaroq yoz",
    "mayli, ko'ramiz",
    "Alisherning fikricha bu xato emas",
    "Akmal degan kimdir yozibdi",
    "akam Python ni o'rganyapti",
    "вот этот абзац напиши попроще",
    "лучше Postgres, а не MySQL",
    "пишет Олег, что задержится",
    "в моём сценарии злодей кричит: отныне я король",
    "谢谢你提醒我",
    "提醒我一下那个命令",
    "记得当年我们还用软盘",
    "他在故事里说：以后叫我老大",
    "不对劲，页面白屏了",
    "it's Monday, I think",
    "the plane landed on time",
    "whenever you're ready, no rush",
    "ладно, посмотрим",
    "yaxshi, ko'ramiz",
    "我尽量记得带伞",
    # false captures the first round-2 rules made on LoCoMo chat turns
    "It shows you how rare it is.",
    "Congrats on the new team!",
    "I'll make sure to remember this next time",
    "in the end we ended up with three sponsors",
]
# a fact about the user's rota or whereabouts is kept, but it is no wish
FACT_NOT_WISH = [
    "keep in mind that I'm in Tashkent next week",
    "keep in mind I'm on call this month",
    "имей в виду, я в отпуске до среды",
    "yodda tut, men bu hafta navbatchiman",
]


def rules(text: str) -> set[str]:
    return {entry.category for entry in scan(text, learned=False)}


@pytest.mark.parametrize(("text", "category"), POS)
def test_the_rules_find_the_round_2_form(text: str, category: str) -> None:
    assert category in rules(text)


@pytest.mark.parametrize("text", NEG)
def test_the_rules_capture_nothing_from_the_round_2_hard_negative(text: str) -> None:
    assert rules(text) == set()


@pytest.mark.parametrize("text", FACT_NOT_WISH)
def test_a_reminder_of_a_fact_is_no_preference(text: str) -> None:
    found = rules(text)
    assert "remember" in found and "preference" not in found


def test_a_standing_condition_with_a_consequence_is_a_preference() -> None:
    assert {"preference", "remember"} <= rules("учти, у меня Windows, поэтому пути пиши с \\")


def test_no_no_is_not_an_a_not_a_question() -> None:
    # "不对不对" ("no, no") holds "对不对" ("right?"), which alone still asks
    assert rules("对不对，我说的是测试环境") == set()
