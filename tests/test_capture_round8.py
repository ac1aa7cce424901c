"""Issue 17, round 8: everyday forms of a choice, a name, a wish (capture-history "Round 8").

Sentences here are in none of the corpus files: the forms each round-8 family
was written for, in every language it exists in, and beside them the hard
negatives that share their words and must capture nothing (rules alone).
"""

from __future__ import annotations

import pytest

from memstrata.capture.scan import scan

FOUND_8 = [
    # en
    ("we've gone for the oak table in the end", "decision"),
    ("pizza night on Friday, done deal", "decision"),
    ("my pick is the grey hatchback", "decision"),
    ("dropping the gym class, we'll run in the park instead", "decision"),
    ("the caterer is confirmed: Mama Rosa's", "decision"),
    ("the family voted and it's Portugal", "decision"),
    ("moving the book club to Thursday from now on", "decision"),
    ("let's just go with the red one", "decision"),
    ("see you tomorrow\n— Benedikt", "proper_noun"),
    ("it's Priyanka btw, the new intern", "proper_noun"),
    ("name's Oskar, I run the bakery", "proper_noun"),
    ("my accountant, Mrs. Whitfield, sent the forms", "proper_noun"),
    ("it's Sian without an h", "proper_noun"),
    ("aisle seat every time", "preference"),
    ("tea over coffee for me", "preference"),
    ("huge fan of plain-text notes", "preference"),
    ("vegan here, so no dairy in the recipes", "preference"),
    ("skip the summaries when you reply to me", "preference"),
    ("oops typo, it's 42 not 24", "correction"),
    ("the bus is at 8:10, I misread the timetable", "correction"),
    ("save this: the locker code is 2290", "remember"),
    # ru
    ("ладно, планёрку переносим на пятницу", "decision"),
    ("в итоге едем на машине", "decision"),
    ("маршрут утверждён, всё согласовано", "decision"),
    ("финальный вариант: синяя обложка", "decision"),
    ("берём дачу на июль, решили", "decision"),
    ("пусть будет Figma", "decision"),
    ("до завтра!\n— Гоша", "proper_noun"),
    ("привет, это Вика, я по поводу заказа", "proper_noun"),
    ("друзья называют меня Тохой", "proper_noun"),
    ("хомяк Бублик сбежал из клетки", "proper_noun"),
    ("я в Озоне работаю, на складе", "proper_noun"),
    ("сына отдала в 12-ю гимназию", "proper_noun"),
    ("мне созвоны удобнее чем переписка", "preference"),
    ("обращайтесь ко мне по имени", "preference"),
    ("без эмодзи в ответах, пожалуйста", "preference"),
    ("сохрани: пароль от вайфая на холодильнике", "remember"),
    # uz
    ("taksi o'rniga metroda boramiz", "decision"),
    ("yakuniy qaror: Buxoroga boramiz", "decision"),
    ("uchrashuv juma kuniga belgilandi", "decision"),
    ("oila ovoz berdi, dengizga boramiz", "decision"),
    ("poyezd chiptalarini oldik", "decision"),
    ("eski telefonni baribir ishlataman", "decision"),
    ("ko'k rang, tamom.", "decision"),
    ("ertagacha!\n— Sardor", "proper_noun"),
    ("salom, bu Dilshod, buyurtma haqida", "proper_noun"),
    ("uy egamiz Karim aka ijarani oshirdi", "proper_noun"),
    ("qizim 21-maktabda o'qiydi", "proper_noun"),
    ("menga qisqa javob ma'qulroq", "preference"),
    ("javoblaring lo'nda bo'lsin", "preference"),
    ("sanani noto'g'ri yozibman, 12-may", "correction"),
    ("ertaga dorini ichishni eslatib tur", "remember"),
    # zh
    ("周会挪到周三", "decision"),
    ("最终决定：去大理", "decision"),
    ("不开车了，改坐地铁", "decision"),
    ("以后周报我来写", "decision"),
    ("全家投票了，去海边", "decision"),
    ("火车票买好了", "decision"),
    ("就按第一版来", "decision"),
    ("我选第三个", "decision"),
    ("明天见！\n——阿明", "proper_noun"),
    ("我是小赵，接着上次的问题", "proper_noun"),
    ("我的会计是孙姐", "proper_noun"),
    ("明天提醒我交房租", "remember"),
    ("存一下：物业电话在冰箱上", "remember"),
]

NOTHING_8 = [
    # en
    "just going with the flow this weekend",
    "my brother's pick is the grey hatchback, not mine",
    "we went for a walk after dinner",
    "is the caterer confirmed yet",
    "the board voted to raise fees",
    "maybe we'll order pizza instead",
    "the bug is confirmed on Android",
    "the quote ends with — Seneca",
    "my friend's accountant, Mrs. Whitfield, retired",
    "the printer jams every time",
    "used to be a huge fan of jazz",
    "Anna's a huge fan of plain-text notes",
    # ru
    "может перенесём планёрку на пятницу",
    "начальник решил что летим в Сочи",
    "пока не решили куда ехать",
    "твой последний ответ обрезался",
    "у подруги хомяк Бублик",
    "раньше мне было удобнее писать от руки",
    # uz
    "balki taksi o'rniga metroda boramiz",
    "javobingiz chala qoldi",
    "do'stim 21-maktabda ishlaydi",
    "ilgari menga qog'oz kitob ma'qulroq edi",
    # zh
    "老板决定了下周加班",
    "本来想去大理，现在又不确定了",
    "你刚才的回复没说完",
    "提醒我一下那个网址",
    "要不周会挪到周三",
]


def rules(text: str) -> set[str]:
    return {entry.category for entry in scan(text, learned=False)}


@pytest.mark.parametrize(("text", "category"), FOUND_8)
def test_round_8_forms_are_found(text: str, category: str) -> None:
    assert category in rules(text)


@pytest.mark.parametrize("text", NOTHING_8)
def test_round_8_hard_negatives_capture_nothing(text: str) -> None:
    assert rules(text) == set()
