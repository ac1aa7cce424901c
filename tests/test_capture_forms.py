"""Issue 17's forms, found by sentence structure in each language (capture/rules).

Sentences here are in none of the corpus files: an introduction without "my
name is", an instruction with a universal scope, a choice made now or a thing
tried first, a note label or "don't forget to <verb>", "not X but Y"; and hard
negatives sharing their words (a document "from the docs", nostalgia, meta
talk, fiction, someone else's decision, "not great, but…").
"""

from __future__ import annotations

import pytest

from memstrata.capture.scan import scan

POS = [
    ("hello, this is Malika from the growth team", "proper_noun"),
    ("Bekzod here, I handle the infra budget", "proper_noun"),
    ("add type hints to every function you write for me", "preference"),
    ("we're choosing Kotlin for the app", "decision"),
    ("let's start with the billing page", "decision"),
    ("final decision: no more Jenkins", "decision"),
    ("memo: the office moves to Chilonzor", "remember"),
    ("don't forget to renew my passport", "remember"),
    ("it's not Friday but Thursday", "correction"),
    ("salom, men Aziz, marketing bo'limidan", "proper_noun"),
    ("avval Go ni sinab ko'ramiz", "decision"),
    ("eslatma: pasportni yangilash", "remember"),
    ("har bir javobda o'zbekcha yoz", "preference"),
    ("здравствуйте, на связи Дмитрий из отдела продаж", "proper_noun"),
    ("для начала попробуем SQLite", "decision"),
    ("напоминание: продлить паспорт", "remember"),
    ("используй аннотации типов во всех функциях", "preference"),
    ("меня зовут Андрей, не Алексей", "correction"),
    ("我是市场部的陈静", "proper_noun"),
    ("我们选了Go", "decision"),
    ("提醒：周五交报告", "remember"),
    ("所有回答都用中文", "preference"),
    ("不是周五，是周四", "correction"),
    # a reminder of the user's own standing condition is a preference too
    ("remember that I'm lactose intolerant when you suggest desserts", "preference"),
    ("keep in mind I don't drive, so no road trips", "preference"),
    ("учти, я не пью кофе", "preference"),
    ("yodda tut: men go'sht yemayman", "preference"),
    ("别忘了我不喝酒", "preference"),
    # surnames, a relative's or a pet's name, "that's my name"
    ("my last name is Yusupova", "proper_noun"),
    ("фамилия у меня Ковалёва", "proper_noun"),
    ("familiyam Rahimova", "proper_noun"),
    ("我姓王", "proper_noun"),
    ("у дочки Алины сегодня утренник", "proper_noun"),
    ("我家猫叫咪咪", "proper_noun"),
    ("it's Dana, that's my name", "proper_noun"),
    # what one eats or drinks, for good
    ("I don't eat pork", "preference"),
    ("я не пью молоко", "preference"),
    ("men baliq yemayman", "preference"),
    ("我不吃辣", "preference"),
]

# reminders of a one-off plan: remember, never a preference
ONE_OFF = [
    "remember that I have a dentist appointment tomorrow",
    "don't forget I'm away tonight",
    "запомни, я завтра в отпуске",
    "unutma, men ertaga kelmayman",
    "别忘了我明天请假",
]
NEG = [
    "This is Python from the docs, copied as is",
    "I remember how we chose Perl, never again",
    "let's summarize the discussion",
    "in the movie the hero is called Neo",
    "not great, but it works",
    "Anna decided to quit, her call",
    "don't forget to fix the bug in your code",
    "Олег решил уйти, это его дело",
    "в книге героя зовут Гарри",
    "давай подведём итоги",
    "他决定辞职了",
    "我记得小时候我们选过这个",
    "yomon emas, rahmat",
    "filmda qahramonning ismi Neo",
    "everyone here, listen up",
    "I don't eat breakfast today, too busy",
    "я сегодня не ем, пост",
    "bugun hech narsa yemayman",
    "我今天不吃饭了",
    "my cat is asleep again",
    "у сына температура",
    "我儿子今天生病了",
    "the hero's name is Frodo",
]


def rules(text: str) -> set[str]:
    return {entry.category for entry in scan(text, learned=False)}


@pytest.mark.parametrize(("text", "category"), POS)
def test_the_rules_find_the_form(text: str, category: str) -> None:
    assert category in rules(text)


@pytest.mark.parametrize("text", NEG)
def test_the_rules_capture_nothing_from_the_hard_negative(text: str) -> None:
    assert rules(text) == set()


@pytest.mark.parametrize("text", ONE_OFF)
def test_a_reminder_of_a_one_off_plan_is_no_preference(text: str) -> None:
    found = rules(text)
    assert "remember" in found and "preference" not in found
