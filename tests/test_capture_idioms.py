"""Issue 17, round 3: idioms the rules took for durable facts (docs/capture-history.md).

Sentences here are in none of the corpus files. Two families, in each language
they exist in, each with the positives that share its words and must still be
found:

* "it's not about X, it's about Y" ("дело не в X, а в Y", "gap X da emas,
  Y da", "不是X的问题，是Y") weighs what matters; it corrects no fact, unlike
  "it's not Python, it's Go";
* a one-off instruction about the answer being written ("don't forget the
  imports in the snippet", "не забудь про импорты в этом примере") keeps
  nothing, unlike "don't forget, the demo is Friday";

and nostalgia spelled without "I" ("remember the good old days of…").
"""

from __future__ import annotations

import pytest

from memstrata.capture.scan import scan

NOT_ABOUT = [
    "it's not about the money, it's about the principle",
    "It's not about speed, it's about correctness.",
    "it's not about whether it works, it's about whether anyone can read it",
    "it's about the principle, not the money",
    "this is about trust, not about speed",
    "дело не в деньгах, а в принципе",
    "Дело не в скорости, а в надёжности.",
    "дело в принципе, а не в деньгах",
    "речь не о скорости, а о надёжности",
    "не в деньгах дело, а в принципе",
    "gap pulda emas, prinsipda",
    "gap tezlikda emas, sifatda",
    "gap prinsipda, pulda emas",
    "masala pulda emas, vaqtda",
    "不是钱的问题，是原则的问题",
    "这不是速度的问题，是质量的问题",
    "是原则的问题，不是钱的问题",
    "不是钱的事，是面子的事",
]
ONE_OFF = [
    "don't forget the imports in the snippet",
    "don't forget the imports in that snippet you gave me",
    "don't forget the semicolons",
    "don't forget to add error handling to that function",
    "remember to add type hints in the example",
    "remember to close the connection in the code above",
    "не забудь про импорты в этом примере",
    "не забудь импорты в коде",
    "не забудь точку с запятой",
    "не забудь обработку ошибок в этой функции",
    "importlarni unutma bu misolda",
    "nuqtali vergulni unutma",
    "bu funksiyada xatolarni tekshirishni unutmang",
    "别忘了代码里的import",
    "别忘了在这个例子里加上import",
    "别忘了分号",
    "这个函数里别忘了处理异常",
    "记得在例子里加上类型注解",
]
NOSTALGIA = [
    "remember the good old days of jquery",
    "remember the time we deployed by ftp, lol",
]
# the forms these must not take away
STILL = [
    ("it's not Python, it's Go", "correction"),
    ("It's not the staging db, it's prod", "correction"),
    ("my email is a@b.io, not a@b.com", "correction"),
    ("это не Python, а Go", "correction"),
    ("почта a@b.io, а не a@b.com", "correction"),
    ("bu Python emas, Go", "correction"),
    ("Malika, Malik emas", "correction"),
    ("不是周五，是周四", "correction"),
    ("don't forget, the demo is on Friday", "remember"),
    ("don't forget my mom's birthday is on March 3rd", "remember"),
    ("don't forget to renew the SSL cert before it lapses", "remember"),
    ("remember that in every example I want type hints", "remember"),
    ("не забудь, дедлайн 15 января", "remember"),
    ("не забудь отправить договор Азизу", "remember"),
    ("unutma, dedlayn 15-yanvar", "remember"),
    ("sertifikatni yangilashni unutmang", "remember"),
    ("别忘了，截止日期是1月15日", "remember"),
    ("别忘了把合同发给阿兹", "remember"),
]


def rules(text: str) -> set[str]:
    return {entry.category for entry in scan(text, learned=False)}


@pytest.mark.parametrize("text", NOT_ABOUT)
def test_what_it_is_about_is_no_correction(text: str) -> None:
    assert "correction" not in rules(text)


@pytest.mark.parametrize("text", ONE_OFF)
def test_a_one_off_instruction_about_the_answer_is_kept_nowhere(text: str) -> None:
    assert "remember" not in rules(text)


@pytest.mark.parametrize("text", NOSTALGIA)
def test_nostalgia_without_i_is_no_reminder(text: str) -> None:
    assert "remember" not in rules(text)


@pytest.mark.parametrize(("text", "category"), STILL)
def test_the_forms_sharing_their_words_are_still_found(text: str, category: str) -> None:
    assert category in rules(text)


# found among the rules' false captures on the training corpus, each written
# anew here: reported speech by a name ending in -я ("Аня говорит", which the
# veto's "(?<!я )" took for the user's own "я говорю"), by a nickname or a
# relative ("小安说是", "跟我说", "我哥说", "my therapist keeps telling me"),
# someone else's decision ("клиент решил", "领导决定…，不是我定的"), "不记得",
# "scratch that question", "I don't know what I want", "never forget the time…",
# a polite "no thanks, not needed" and meta talk ("xulosa qilaylik")
OTHERS = [
    "Катя говорит, что её собаку зовут Буся",
    "Ваня рассказал, что его жену зовут Лена",
    "Таня говорит, что в среду, а не в четверг",
    "заказчик решил взять Azure, это не моё решение",
    "小周说是周三，不是周四",
    "小李跟我说他的狗叫豆豆",
    "我姐说这次一定要我记住她的地址",
    "老板决定用MySQL，不是我定的",
    "不记得密码放哪了",
    "我到现在还记得第一次写代码",
    "my doctor keeps telling me I prefer sugar too much",
    "scratch that question, not important",
    "honestly I don't know what I want for the logo",
    "never forget the night the db died, lol",
    "yo'q, rahmat, hozir kerak emas",
    "ob-havo yaxshi emas, yana qor yog'yapti",
    "keling, Redis bo'yicha gaplarimizni xulosa qilaylik",
    "mayli, keyingi savolga o'tamiz",
]
STILL_OTHERS = [
    ("я сказал, что меня зовут Сардор", "proper_noun"),
    ("Мы решили взять Azure", "decision"),
    ("我们决定用MySQL", "decision"),
    ("别忘了，我的护照8月到期", "remember"),
    ("scratch that, the meeting is at 3", "correction"),
    ("I want replies in Russian", "preference"),
    ("yo'q, Malika emas, Malik", "correction"),
    ("mayli, ikkinchi variantni olamiz", "decision"),
]


@pytest.mark.parametrize("text", OTHERS)
def test_others_words_and_declines_capture_nothing(text: str) -> None:
    assert rules(text) == set()


@pytest.mark.parametrize(("text", "category"), STILL_OTHERS)
def test_the_users_own_forms_are_still_found(text: str, category: str) -> None:
    assert category in rules(text)


# round 3c, from the rules' false captures on native3/ (read after its one
# measurement), each written anew: the artefacts of a one-off fix widened
# (regex, json, sql…), "that's all for now", "X, not surprised", "note that
# I'm not saying…", a friend's pet, "не знаю, а ты…", a choice at a former
# job, "не знаю, что мне нравится", a wish with "ko'rsating / bo'lsin, X emas",
# "sifatida emas", "akam Vim'ni" (an object), "ismim … da bor", a book's town,
# "faqat shu javobda", "代码里别忘了", "以后用得着：", a liking of the past,
# a friend's cat
OTHERS_3C = [
    "don't forget the anchors in that regex",
    "remember to sort the keys in the json output",
    "nope, that's it for now",
    "the build failed again, not surprised",
    "note that I'm just asking, no pressure",
    "my neighbour's cat is called Smudge",
    "не помню, а вы как считаете",
    "в прошлой компании выбрали Jira, все страдали",
    "не уверен, какой шрифт мне больше нравится",
    "narxlarni so'mda ko'rsating, yevroda emas",
    "hazil sifatida emas, jiddiy aytyapman",
    "ukam Rust'ni o'rganyapti",
    "ismim ro'yxatda bor",
    "kinodagi qishloq nomi Oqtepa edi",
    "faqat shu safar qisqa yozing",
    "示例里别忘了关闭文件",
    "以后用得上：备份在NAS的第二个盘",
    "上学的时候我喜欢踢足球",
    "同事家的猫叫年糕",
]
STILL_3C = [
    ("don't forget, my flight is at 6am", "remember"),
    ("no, it's the staging db that's down", "correction"),
    ("it's Go, not Rust", "correction"),
    ("note that the office moved to Chilonzor", "remember"),
    ("my dog is named Rex", "proper_noun"),
    ("нет, в среду, а не в четверг", "correction"),
    ("мы выбрали Jira", "decision"),
    ("мне больше нравится тёмная тема", "preference"),
    ("bu Python emas, Go", "correction"),
    ("akam Sardor Toshkentda yashaydi", "proper_noun"),
    ("ismim Jasur", "proper_noun"),
    ("faqat o'zbek tilida yozing", "preference"),
    ("以后回答都用中文", "preference"),
    ("我喜欢简短的回答", "preference"),
    ("我家的猫叫年糕", "proper_noun"),
]


# round 3d: questions phrased as statements, written by hand: a tag question
# asks for confirmation ("…, right", "…, да", "…, shundaymi", "…，对吧"),
# "I wonder whether…" is open doubt
TAG_QUESTIONS = [
    "so we're deploying on fridays now, right",
    "and we settled on Kafka, didn't we",
    "I wonder if we decided on the blue logo",
    "итак, мы остановились на Kafka, верно",
    "значит, релиз в пятницу, да",
    "xullas, Kafka'ni tanladik, shundaymi",
    "ismim Bobur ekan, to'g'rimi",
    "那我们就用Kafka了，对吧",
    "logo定了蓝色的，是吧",
]
STILL_3D = [
    ("right, we're going with Kafka", "decision"),
    ("we settled on Kafka", "decision"),
    ("да, мы выбрали Kafka", "decision"),
    ("mayli, Kafka'ni tanladik", "decision"),
    ("那就用Kafka吧，定了", "decision"),
]


@pytest.mark.parametrize("text", TAG_QUESTIONS)
def test_a_tag_question_captures_nothing(text: str) -> None:
    assert rules(text) == set()


@pytest.mark.parametrize(("text", "category"), STILL_3D)
def test_a_plain_statement_is_still_found(text: str, category: str) -> None:
    assert category in rules(text)


# round 4, from the rules' false captures on native4/ (read after its one
# measurement), each written anew: "I meant the second option" points at the
# answer, "I prefer not to say" declines, "note that this is just a draft"
# qualifies the text, "don't forget to close the code block" fixes the
# answer (code blocks, brackets, indentation), a word choice in the current
# translation ("'X' so'zi bu yerda yaxshiroq, 'Y' emas"), "call me X, not Y"
# as a wish, a relative's liking of a famous person ("otam Yulduz Usmonovani
# yaxshi ko'rardi"), a colleague's "一直说", a past liking ("以前我喜欢…"), a
# version in use ("我用的是Python 3.12"), "记得1985年…过" (nostalgia), "搞定了"
OTHERS_4 = [
    "nope, I meant the first suggestion you made",
    "I meant the last snippet, sorry",
    "I prefer not to answer that one",
    "I'd prefer not to get into that",
    "note that it's only a rough sketch",
    "note that this is just an example",
    "don't forget to close the brackets",
    "don't forget to fix the indentation",
    "нет, я имела в виду первый пример",
    "я имел в виду последний вариант",
    "не забудь закрыть скобки",
    "не забудь про блок кода в конце",
    "yo'q, birinchi variantni nazarda tutgandim",
    "oxirgi javobni nazarda tutganman",
    "kod blokini yopishni unutmang",
    "'shartnoma' so'zi bu yerda mosroq, 'kelishuv' emas",
    "meni Abdulla emas, Abu deb chaqiring",
    "onam Yulduz Usmonovani juda yaxshi ko'rardi",
    "主管一直说要上K8s，我还在犹豫",
    "室友总说要早睡",
    "以前我喜欢用Eclipse，现在无所谓",
    "记得2003年在网吧玩过传奇",
    "好了，已经搞定了",
    "别忘了把括号补上",
    "别忘了代码块的缩进",
]
STILL_4 = [
    ("no, I meant the staging server, not prod", "correction"),
    ("I meant Tuesday, not Monday", "correction"),
    ("I prefer short answers", "preference"),
    ("I don't like long answers", "preference"),
    ("note that the office moves to Yunusobod in May", "remember"),
    ("note that I'm vegetarian", "remember"),
    ("don't forget to renew my passport in June", "remember"),
    ("нет, я имел в виду стейджинг, а не прод", "correction"),
    ("не забудь, у меня отпуск с 3 мая", "remember"),
    ("yo'q, men staging serverni nazarda tutgandim, prod emas", "correction"),
    ("unutmang, mening navbatchiligim dushanbada", "remember"),
    ("bu Python emas, Go", "correction"),
    ("meni Abu deb chaqiring", "proper_noun"),
    ("onam Yulduz Toshkentda yashaydi", "proper_noun"),
    ("以后回答都用中文", "preference"),
    ("以前我喜欢Java，现在更喜欢Go", "preference"),
    ("记住我用的是Mac，命令给zsh的就行", "preference"),
    ("记得2026年3月前续费域名", "remember"),
    ("定了，用Postgres", "decision"),
    ("别忘了，我周五要去医院", "remember"),
]


def test_round_4_a_version_in_use_is_a_value_not_a_wish() -> None:
    assert rules("我用的是Node 20") == {"specific_value"}


# round 4b: a pasted error line keeps nothing, neither for the rules nor for
# the scorer (the scorer took "…: context deadline exceeded" for a reminder
# on native4/); a decision after the paste, on its own line, still counts
PASTED_ERRORS = [
    "ValueError: note that the key must be a string",
    "ошибка такая: RuntimeError: не забудьте вызвать init",
    "xato: ValueError: eslab qoling, kalit matn bo'lishi kerak",
    "报错：RuntimeError: 别忘了先调用init",
]


@pytest.mark.parametrize("text", PASTED_ERRORS)
def test_round_4b_a_pasted_error_captures_nothing(text: str) -> None:
    assert {entry.category for entry in scan(text)} & {
        "remember",
        "decision",
        "correction",
        "preference",
        "proper_noun",
    } == set()


def test_round_4b_an_error_in_prose_still_counts() -> None:
    assert "remember" in rules("remember: our error budget is 0.1% a month")


def test_round_4b_a_decision_after_the_paste_still_counts() -> None:
    text = 'here is the log:\nKeyError: "user"\nanyway, we decided to go with FastAPI'
    assert "decision" in rules(text)


# round 5, from the rules' misses and false captures on native4/ and native5/
# (training data), each written anew: the people a user names by their role
# ("my accountant is …", "my granddaughter Ellie", "наш тренер — …", "nevaram
# Oysha", "孙子小宝", "数学老师是王老师"), a thing of the user's "called …"
# without "my", a reminder without "remember" ("don't let me forget", "remind
# me tomorrow that…", "не дай мне забыть", "esimdan chiqmasin", "别让我忘了"),
# a slip corrected after "sorry / oops / wait", "we're going ahead with", and
# a Russian decision with words before its infinitive; the hard negatives
# beside them (a nationality after "my teacher is", someone else's accountant,
# decision or habit, "remind me how…", "we went with it … then ditched it",
# "keep in mind that this is only an estimate", "они говорят / deyishadi",
# "记得上次…", "…交了没有")
STILL_5 = [
    ("my dentist is Dr. Moreau, the one on Elm Street", "proper_noun"),
    ("our vet is Anika Shah at Greenfield", "proper_noun"),
    ("my grandson Tobias showed me how to do this", "proper_noun"),
    ("my late wife Margaret kept all the receipts", "proper_noun"),
    ("we run a little bakery called Crumb & Co", "proper_noun"),
    ("the dog is called Biscuit, he's a beagle", "proper_noun"),
    ("dont let me forget the parents' evening on the 5th", "remember"),
    ("remind me tomorrow that the gas meter reading is due", "remember"),
    ("oops, wrong date, it's the 19th", "correction"),
    ("sorry, Leeds, not Bradford", "correction"),
    ("we're going ahead with the loft conversion", "decision"),
    ("наш тренер — Вадим Петрович, строгий, но толковый", "proper_noun"),
    ("внучка Сонечка научила меня видеозвонкам", "proper_noun"),
    ("не дай мне забыть продлить полис", "remember"),
    ("напомни в пятницу, что надо сдать показания счётчиков", "remember"),
    ("мы решили этим летом не ехать на море", "decision"),
    ("решился на переезд в Тверь", "decision"),
    ("выбрала вечерние курсы английского", "decision"),
    ("murabbiyimiz Anvar aka juda talabchan", "proper_noun"),
    ("nevaram Oysha menga telefonni o'rgatdi", "proper_noun"),
    ("dushanba kuni hisobotni topshirish kerak, esimdan chiqmasin", "remember"),
    ("ertaga esimga solib qo'ying, gaz hisoblagichi", "remember"),
    ("外孙小乐教我用微信", "proper_noun"),
    ("我家孩子的数学老师是王老师", "proper_noun"),
    ("周三交物业费，别让我忘了", "remember"),
]
OTHERS_5 = [
    "my teacher is English, she moved here in 2010",
    "my brother's accountant is Tom Reyes",
    "my friend's dog is called Pretzel",
    "remind me how the tax code works",
    "sorry, it's late, not my best work",
    "we're keeping an eye on the leak",
    "we went with it for a while and then ditched it",
    "keep in mind that this is only an estimate",
    "we're calling the plumber Tuesday",
    "я решил задачу за пять минут",
    "брат выбрал себе новый телефон",
    "напомни, как считается НДФЛ",
    "сосед решил продать гараж",
    "ukam har doim futbolni yoqtiradi",
    "bu qoidani eslab qoling deb aytishadi",
    "儿子小时候很怕黑",
    "老公老是忘带钥匙",
    "我姐决定去深圳工作",
    "记得上次去北京堵了三个小时",
    "报告我们交了没有",
]


# round 5b: a choice stated as done, without "decided" ("booked the 7:40",
# "ok picked option B", "I'm taking the job", "we're dropping X", "в итоге
# взяли …", "беру …", "ладно, пусть будет …", "最后还是选了…", "说好了，…",
# "不讨论了"), and "没什么" / "什么都" are no questions; the hard negatives beside
# them (picking up, going with someone, dropping by, a habit, not yet decided)
STILL_5B = [
    ("booked the 6:15 ferry, so that's sorted", "decision"),
    ("ok picked the green one", "decision"),
    ("I'm taking the flat on Cole Street", "decision"),
    ("we're dropping the weekend shift from May", "decision"),
    ("gonna stick with the old printer", "decision"),
    ("в итоге взяли дачу поближе", "decision"),
    ("беру тариф подороже, так надёжнее", "decision"),
    ("ну ладно, пусть будет Svelte", "decision"),
    ("最后还是选了三楼那套", "decision"),
    ("说好了，周四搬家", "decision"),
    ("就用飞书了，不讨论了", "decision"),
    ("定了朝南那间，没什么好犹豫的", "decision"),
]
OTHERS_5B = [
    "picked up the kids at five",
    "went with my mum to the market",
    "we're dropping by later with the cake",
    "I haven't made up my mind yet",
    "в самолёте обычно беру место у прохода",
    "сосед в итоге взял кредит",
    "他们最后选了别的方案",
    "还没说好，周末再商量",
]


# round 5c (Uzbek): a keep request with a polite suffix ("eslatib qo'ying",
# "saqlab qo'ying"), "yodingizda tursin", "esdan chiqarmang", "keyinroq
# uchun:", and a choice settled ("mayli, … bo'lsin", "oxiri … oldik", "…ga
# to'xtaldik", "…ga surdik", "gap tamom"); beside them, someone else's choice,
# "yozib qo'yaman" (the user's own act) and a question
STILL_5C = [
    ("seshanba kuni soliq to'lashimni eslatib qo'ying", "remember"),
    ("saqlab qo'ying: garaj kaliti qo'shnida", "remember"),
    ("yodingizda tursin, men sut ichmayman", "remember"),
    ("keyinroq uchun: wifi paroli stol ostida yozilgan", "remember"),
    ("mayli, Flutter bo'lsin", "decision"),
    ("oxiri arzonroq kvartirani oldik", "decision"),
    ("Toshkentdagi filialga to'xtaldik", "decision"),
    ("ko'chishni bahorga surdik", "decision"),
    ("Django'da yozamiz, gap tamom", "decision"),
]
OTHERS_5C = [
    "akam oxiri yangi mashinani oldi",
    "qo'shnilar to'yni kuzga surdi",
    "hozir o'zim yozib qo'yaman",
    "mayli, yaxshi dam oling",
]

# round 6, from the rules' misses on native6/ (training data), each written
# anew: the people, pets and places of the user's world by a role the older
# lists lacked ("my brother-in-law Marcus", "тёща Валентина", "qaynonam Zuhra
# opa", "表哥张强", "我的健身教练叫大伟"), a child's school ("year 2 at …", "садик
# №14", "21-maktabda", "在育英小学"), a group "we're the …", a name given by "us"
# ("мы называемся …", "… deymiz"); a choice with its subject or a closing word
# ("we're sticking with", "instead of", "decided against", ", точка",
# "-adigan bo'ldik", "belgiladik", "…定在…", "不买新车了，…"); the hard negatives
# beside them (someone else's pet, uncle Sam, "we might … instead of", the
# school's decision, "мой друг работает в …", a place in "Toshkentdagi", a
# neighbour's dog, "就要下雨了")
STILL_6 = [
    ("my brother-in-law Marcus is staying with us this week", "proper_noun"),
    ("our new childminder is Beata, she starts on the 3rd", "proper_noun"),
    ("my daughter's coach is Mr Fenwick", "proper_noun"),
    ("the clinic is Harbour Physio, by the station", "proper_noun"),
    ("grandma Edie is 94 and still does the crossword", "proper_noun"),
    ("I run a walking club for retirees, we're the Red Kites", "proper_noun"),
    ("my son is in year 2 at Oakfield Primary", "proper_noun"),
    ("we're sticking with the old boiler for one more winter", "decision"),
    ("I'll walk to work instead of taking the bus from now on", "decision"),
    ("we've chosen the later flight home", "decision"),
    ("decided against the extension, too expensive", "decision"),
    ("decision from the parents' meeting: no phones at dinner", "decision"),
    ("please don't suggest recipes with nuts unless I ask", "preference"),
    ("наш семейный врач — Олег Борисович, принимает по средам", "proper_noun"),
    ("на майские приезжает тёща Валентина", "proper_noun"),
    ("тренер сына — Андрей Викторович", "proper_noun"),
    ("сын ходит в садик №14", "proper_noun"),
    ("мы называемся «Северный ветер», играем по субботам", "proper_noun"),
    ("на поход берём палатку, точка", "decision"),
    ("окончательно: едем на машине", "decision"),
    ("остаюсь с нынешним тарифом", "decision"),
    ("qaynonam Zuhra opa ertaga keladi", "proper_noun"),
    ("itimiz Barsik juda sho'x", "proper_noun"),
    ("o'g'lim 21-maktabda o'qiydi", "proper_noun"),
    ('dala hovlimizni "Bog\'ishamol" deymiz', "proper_noun"),
    ("ta'tilni Samarqandda o'tkazadigan bo'ldik", "decision"),
    ("yig'ilishni payshanbaga belgiladik", "decision"),
    ("mehmonxonani ikki kechaga band qildim", "decision"),
    ("我的健身教练叫大伟", "proper_noun"),
    ('我们读书会叫"夜读"', "proper_noun"),
    ("舅妈的事先不说，表哥张强下个月结婚", "proper_noun"),
    ("儿子在育英小学读二年级", "proper_noun"),
    ("年夜饭定在大年三十中午", "decision"),
    ("不买新车了，修修接着开", "decision"),
    ("本来打算去云南，算了，就在家附近玩", "decision"),
]
OTHERS_6 = [
    "my friend's dog is Bruno, a big softie",
    "my cousin's puppy is Nala, so cute",
    "uncle Sam wants you, says the poster",
    "we're switching it off and on again",
    "we might take the tram instead of walking",
    "chosen by whom, though",
    "the school decided against uniforms",
    "соседская тёща всё время кричит",
    "мой друг работает в «Сбере»",
    "брат остаётся с нами на выходные? не знаю",
    "akam Toshkentdagi ofisda ishlaydi",
    "ammam itining ismi Bars deydi",
    "qarori hali kutilmoqda",
    "邻居家的狗叫旺财",
    "你的助手叫什么",
    "学校把家长会定在下周",
    "天就要下雨了，快收衣服",
    "надо было бы раньше купить, взяли бы дешевле",
    "мы пока выбираем между Сочи и Анапой",
    "директор школы выбрал новую форму",
    "早知道就买大一号的了",
    "舅舅说他家猫叫花花",
    "主管决定把周会改到周一",
    "同事给女儿取名叫朵朵",
]

# round 6c, the same from native6's remaining misses: "remember <Name> works …",
# "I was wrong, …", an option that "wins, moving on" (победил / yutdi / 胜出), a
# standing limit "unless I ask" (пока я не спрошу / so'ramagunimcha / 我没问的时候),
# "зовите меня …", "men … bo'limidan <Name>", a quoted name after the user's
# place (叫"…"), "…订在…", "给女儿选了…", "备注一下："; and their hard negatives
STILL_6C = [
    ("please remember Oksana never works weekends", "remember"),
    ("I was wrong, it's the blue folder, not the green one", "correction"),
    ("option C wins, moving on", "decision"),
    ("always keep it short when you summarise my emails", "preference"),
    ("don't send me workout plans unless I ask", "preference"),
    ("зовите меня просто Лёша", "proper_noun"),
    ("второй вариант победил, переходим к следующему", "decision"),
    ("не присылайте рецепты, пока я сама не попрошу", "preference"),
    ("men marketing bo'limidan Shahnoza", "proper_noun"),
    ("ikkinchi variant yutdi, davom etamiz", "decision"),
    ("men so'ramagunimcha eslatma yubormang", "preference"),
    ('我开了家咖啡馆，叫"慢时光"', "proper_noun"),
    ('我们工作室叫"青木"', "proper_noun"),
    ("婚宴订在国庆节", "decision"),
    ("给女儿选了钢琴课", "decision"),
    ("方案B胜出，继续下一项", "decision"),
    ("备注一下：车位号是B2-117", "remember"),
    ("我没问的时候不要给我推荐股票", "preference"),
]
OTHERS_6C = [
    "I remember Tomasz from school, he was funny",
    "they were wrong, the forecast said sun",
    "Arsenal won, what a game",
    "зовут его Лёша",
    "наша команда победила в турнире",
    "jamoamiz yutdi, zo'r o'yin bo'ldi",
    '朋友的店叫"小满"，挺有名',
    '附近有一家叫"慢时光"的咖啡馆',
]

# round 7, from native7's hard negatives (docs/capture-history.md "Round 7"): sarcasm
# ("said no one ever", "ну да, конечно", "…, ага", "ishondingmi", "呵呵"), a conditional
# by inversion ("had I known"), a past choice told as a story, a complaint about today,
# names given as alternatives ("Оля или Юля", "Anvar yoki Akmal"), a remark on the
# previous reply, imagining, forwarding, student days, "you'll remember", a friend's
# company, a relative before a place ("opam Samarqandga"); and the forms found since:
# the Russian name before the verb in the instrumental, the role before "у меня", a pet
# after "у нас", diminutive roles, an employer or kindergarten without quotes,
# "забронили", "final:", "I'm going with", "fikrimni o'zgartirdim,", 改主意了/我选了/订了
OTHERS_7 = [
    "I just adore Monday standups, said no one ever",
    "yeah right, I prefer working weekends",
    "had I known, we'd have picked the bigger flat",
    "were I in charge, we'd use Rust everywhere",
    "back in 2019 we went with Heroku and regretted it",
    "I hate that the bus skipped my stop again this morning",
    "I'm sure you'll remember the details better than I do",
    "ну да, конечно, люблю работать по выходным",
    "ну конечно, а меня зовут Наполеон",
    "обожаю понедельники, ага",
    "кажется, её зовут Оля или Юля",
    "у коллеги собака называется Рекс",
    "ha-ha, albatta, navbatda turishni yaxshi ko'raman",
    "mening ismim Napoleon, ishondingmi",
    "qo'shnining ismi Anvar yoki Akmal",
    "hamkasbimning startapi Nur deb ataladi",
    "opam Samarqandga ketdi",
    "eslatma: avvalgi javobingiz noto'g'ri formatda edi",
    "备注：上一个回答格式乱了",
    "给狗取名叫将军，想想就好玩",
    "转发一下客户的话：“记住合同周五到期”",
    "读书的时候我很喜欢周杰伦",
    "呵呵，我最喜欢加班了",
    "I'm going with my sister to the market",
    "我们还没选好，可能订了也会退",
]
STILL_7 = [
    ("дочку Алиной зовут", "proper_noun"),
    ("кота Персиком назвали", "proper_noun"),
    ("жена у меня Лена", "proper_noun"),
    ("у нас попугай Кеша", "proper_noun"),
    ("моя сестрёнка Варя", "proper_noun"),
    ("мой шеф Олег Иваныч", "proper_noun"),
    ("работаю в Яндексе", "proper_noun"),
    ("сын ходит в садик Ромашка", "proper_noun"),
    ("забронили домик на выходные", "decision"),
    ("okay final: we launch in April", "decision"),
    ("I'm going with the cheaper plan", "decision"),
    ("fikrimni o'zgartirdim, Android olaman", "decision"),
    ("改主意了，坐高铁", "decision"),
    ("我选了靠窗的位置", "decision"),
    ("订了周六的电影票", "decision"),
    ("my name is Nadia and I prefer short answers", "proper_noun"),
    ("меня зовут Оля, пиши покороче", "proper_noun"),
    ("opam Dilfuza", "proper_noun"),
    ("xotinim Olga", "proper_noun"),
]


# each round's hard negatives (3c, 4, 5, 5b, 5c, 6, 6c, 7, above) capture nothing, and
# the forms beside them are found
ROUNDS_OTHERS = [
    *OTHERS_3C,
    *OTHERS_4,
    *OTHERS_5,
    *OTHERS_5B,
    *OTHERS_5C,
    *OTHERS_6,
    *OTHERS_6C,
    *OTHERS_7,
]
ROUNDS_STILL = [*STILL_3C, *STILL_4, *STILL_5, *STILL_5B, *STILL_5C, *STILL_6, *STILL_6C, *STILL_7]


@pytest.mark.parametrize("text", ROUNDS_OTHERS)
def test_each_rounds_hard_negatives_capture_nothing(text: str) -> None:
    assert rules(text) == set()


@pytest.mark.parametrize(("text", "category"), ROUNDS_STILL)
def test_each_rounds_forms_are_still_found(text: str, category: str) -> None:
    assert category in rules(text)
