"""Generated Russian prose for the demo chapters, from word lists written for this module.

The book is a district chronicle compiled from archive papers. The text only has to read
as Russian to a tokenizer and to someone skimming a tool result: grammar is kept simple
(present tense; gender agreement by suffix rules on a vocabulary chosen to follow them).
Invented surnames and place names, archive references and document headings in capitals
are mixed in on purpose: with them a chapter tokenizes at about 2.24 characters per o200k
token (about 44,600 tokens per 100,000 characters, the seed's figure), and about 27% of
its characters are ASCII, so the seed's script rule says about 43,200 (seed: 43,423).
Plain everyday Russian would tokenize at over 3 characters per token.

Speed: a fixed pool of sentences is built once per process; a chapter is a seeded
random choice of pool sentences grouped into paragraphs, so a 100,000-character chapter
costs about a thousand list picks and one join, with no per-character Python loop.
"""

# ruff: noqa: RUF001, RUF003
# (The module is made of Russian words: Cyrillic letters that look Latin are intended.)

from __future__ import annotations

import random
from functools import cache


def _words(text: str) -> tuple[str, ...]:
    """The space-separated words of `text` (word lists read better as one string)."""
    return tuple(text.split())


# Adjectives in the masculine nominative, all in -ый, -ой or -кий/-гий/-хий: the only
# endings the suffix rules in _adjective handle.
_ADJECTIVES = _words(
    "старый новый тёмный светлый пустой тихий широкий высокий ветхий каменный деревянный "
    "заброшенный забытый длинный узкий глубокий холодный тёплый медный дубовый чужой "
    "родной густой серый белый красный жёлтый влажный крутой гладкий мокрый строгий "
    "шумный резной сырой ржавый полутёмный"
)

# Inanimate nouns by gender (nominative); their accusative follows simple rules.
_NOUNS = {
    "m": _words(
        "дом фонарь сундук архив перевал маяк тракт омут овраг флигель чердак погреб "
        "камень колокол амбар переулок журнал ключ забор"
    ),
    "f": _words(
        "река дорога мельница башня лестница библиотека рукопись тетрадь карта телега "
        "шкатулка калитка часовня пристань записка"
    ),
    "n": _words("окно озеро поле письмо зеркало здание село облако крыльцо гнездо"),
}

_PEOPLE = _words(
    "мельник учитель лесник капитан сторож кузнец писарь старик странник смотритель "
    "учительница хозяйка вдова сестра старуха почтальонша"
)

_FIRST_NAMES = _words(
    "Гордей Аким Ефим Прохор Матвей Савелий Агафья Марфа Устинья Пелагея Фёдор Тихон "
    "Евдокия Варвара Никифор Лукерья Игнат Ульяна Терентий Серафима"
)

# Syllables for invented surnames and places: rare letter runs tokenize in short pieces.
_ROOTS = _words("Зар Крив Бел Черн Мох Вол Гряз Сух Лоп Кудр Шир Ряб Хмел Дуб Ерш Щегл Жур Вых")
_MIDDLES = ("о", "е", "об", "ен", "ух", "ял", "ищ", "ыр")
# Surname endings as (masculine, feminine).
_SURNAME_ENDS = (
    ("ов", "ова"),
    ("ин", "ина"),
    ("ев", "ева"),
    ("ский", "ская"),
    ("ницкий", "ницкая"),
    ("ухин", "ухина"),
)
# Place-name endings as (nominative, prepositional, genitive).
_PLACE_ENDS = (
    ("ск", "ске", "ска"),
    ("овка", "овке", "овки"),
    ("ино", "ине", "ина"),
    ("град", "граде", "града"),
    ("озёрье", "озёрье", "озёрья"),
    ("поль", "поле", "поля"),
)

_VERBS_TRANSITIVE = _words(
    "видит находит открывает закрывает чинит ищет рисует разглядывает обходит охраняет "
    "вспоминает покидает пересекает осматривает переписывает запирает строит покупает"
)

_VERBS_INTRANSITIVE = _words(
    "живёт молчит ждёт работает спит смеётся стоит задерживается вздыхает ночует"
)

_ADVERBS = _words(
    "медленно тихо осторожно долго внимательно снова нехотя неторопливо молча по-прежнему "
    "вдруг едва уже опять"
)

_PLACES = (
    "у старой мельницы",
    "на берегу реки",
    "за высоким забором",
    "в тёмном коридоре",
    "под каменным мостом",
    "возле заброшенного маяка",
    "на краю оврага",
    "в пустой библиотеке",
    "у самой дороги",
    "на скрипучем крыльце",
    "среди мокрых полей",
    "в дальнем углу амбара",
    "под серым небом",
    "за рекой",
    "на рассвете",
    "после долгого разговора",
)

_SPEECH = (
    "Не торопись, до вечера ещё далеко",
    "Я видел это письмо раньше",
    "Дорога сегодня тяжёлая",
    "Ключ лежит там, где мы его оставили",
    "Никто не приходил с самого утра",
    "Запиши всё, что услышал",
    "Завтра пойдём через перевал",
)

_DOCUMENTS = (
    "ведомость о приходе и расходе хлеба",
    "опись имущества",
    "прошение о выдаче леса",
    "рапорт о пожаре",
    "список недоимщиков",
    "протокол сельского схода",
)

_QUOTE_LEADS = ("На обложке значится", "В деле подшит лист", "Писарь озаглавил бумагу")

_ENDINGS = (".", ".", ".", ".", "!", "...")

# Tuned by measurement so a chapter comes out at about 44,600 o200k tokens and 43,200
# by the script rule per 100,000 characters: names, references and capitals are the
# parts that tokenize densely. Changing any of these changes every demo figure.
NAME_SHARE = 0.9
REFERENCE_SHARE = 0.6
FORM_WEIGHTS = (3, 3, 3, 2, 2, 6)
_POOL_SIZE = 6000
_POOL_SEED = 20_240_601


def _adjective(masc: str, gender: str, case: str) -> str:
    """The adjective in `gender` ('m', 'f', 'n'), nominative or accusative (inanimate)."""
    if gender == "m":
        return masc
    stem = masc[:-2]
    if gender == "n":
        return stem + "ое"
    return stem + ("ую" if case == "acc" else "ая")


def _noun_accusative(noun: str, gender: str) -> str:
    # Only feminine nouns in -а/-я change; -ь nouns and inanimate m/n do not.
    if gender == "f" and noun[-1] == "а":
        return noun[:-1] + "у"
    if gender == "f" and noun[-1] == "я":
        return noun[:-1] + "ю"
    return noun


def _object(rng: random.Random) -> str:
    gender = rng.choice("mfn")
    noun = rng.choice(_NOUNS[gender])
    return f"{_adjective(rng.choice(_ADJECTIVES), gender, 'acc')} {_noun_accusative(noun, gender)}"


def _person_name(rng: random.Random) -> str:
    """A first name and an invented surname that agrees with it in gender."""
    first = rng.choice(_FIRST_NAMES)
    ending = rng.choice(_SURNAME_ENDS)[1 if first[-1] in "ая" else 0]
    return f"{first} {rng.choice(_ROOTS)}{rng.choice(_MIDDLES)}{ending}"


def _place_name(rng: random.Random, case: int = 0) -> str:
    """An invented place name; `case` 0 nominative, 1 prepositional, 2 genitive."""
    return rng.choice(_ROOTS) + rng.choice(_MIDDLES) + rng.choice(_PLACE_ENDS)[case]


def _reference(rng: random.Random) -> str:
    # Archive references: digits and abbreviations tokenize in short pieces.
    if rng.random() < 0.5:
        return f" (л. {rng.randrange(1, 400)}{rng.choice(('', ' об.'))})"
    return f" (ф. {rng.randrange(1, 90)}, оп. {rng.randrange(1, 9)}, д. {rng.randrange(1, 600)})"


def _subject(rng: random.Random) -> str:
    if rng.random() < NAME_SHARE:
        return _person_name(rng)
    person = rng.choice(_PEOPLE)
    gender = "f" if person[-1] in "ая" else "m"
    return f"{_adjective(rng.choice(_ADJECTIVES), gender, 'nom')} {person}"


def _action(rng: random.Random) -> str:
    return (
        f"{_subject(rng)} {rng.choice(_ADVERBS)} {rng.choice(_VERBS_TRANSITIVE)} "
        f"{_object(rng)} {rng.choice(_PLACES)}"
    )


def _dated(rng: random.Random) -> str:
    return (
        f"в {rng.randrange(1850, 1921)} году {_subject(rng)} "
        f"{rng.choice(_VERBS_INTRANSITIVE)} в {_place_name(rng, 1)}, "
        f"в {rng.randrange(5, 20)} верстах от {_place_name(rng, 2)}"
    )


def _contrast(rng: random.Random) -> str:
    return (
        f"{rng.choice(_PLACES)} {_subject(rng)} {rng.choice(_VERBS_TRANSITIVE)} "
        f"{_object(rng)}, а {_subject(rng)} {rng.choice(_ADVERBS)} "
        f"{rng.choice(_VERBS_INTRANSITIVE)}"
    )


def _speech(rng: random.Random) -> str:
    return (
        f"— {rng.choice(_SPEECH)}, — говорит {_person_name(rng)}, "
        f"и {_subject(rng)} {rng.choice(_VERBS_TRANSITIVE)} {_object(rng)}"
    )


def _list(rng: random.Random) -> str:
    return (
        f"{rng.randrange(2, 29)}-го числа {_subject(rng)} {rng.choice(_VERBS_TRANSITIVE)} "
        f"{_object(rng)} и {_object(rng)}"
    )


def _document(rng: random.Random) -> str:
    # Headings of quoted archive papers are in capitals, as the clerks wrote them.
    heading = (
        f"{rng.choice(_DOCUMENTS)} по {rng.choice(_ROOTS)}{rng.choice(_MIDDLES)}ской "
        f"волости за {rng.randrange(1850, 1921)} год"
    )
    return f"{rng.choice(_QUOTE_LEADS)}: «{heading.upper()}»"


_FORMS = (_action, _dated, _contrast, _speech, _list, _document)


def _sentence(rng: random.Random) -> str:
    """One sentence from one of a few templates; capitalized, with final punctuation."""
    body = rng.choices(_FORMS, weights=FORM_WEIGHTS)[0](rng)
    reference = _reference(rng) if rng.random() < REFERENCE_SHARE else ""
    return body[0].upper() + body[1:] + reference + rng.choice(_ENDINGS)


@cache
def sentence_pool() -> tuple[str, ...]:
    """The fixed pool of sentences chapters are made of (built once per process)."""
    rng = random.Random(_POOL_SEED)
    return tuple(_sentence(rng) for _ in range(_POOL_SIZE))


def paragraph(rng: random.Random, sentences: int) -> str:
    """`sentences` pool sentences joined into one paragraph."""
    return " ".join(rng.choices(sentence_pool(), k=sentences))


def chapter_text(number: int, chars: int) -> str:
    """Chapter `number` of the demo chronicle: a heading and paragraphs, about `chars` long.

    Deterministic in (number, chars); different chapters differ. The result is at
    least `chars` characters and overshoots by less than one paragraph (about 1,000
    characters at most).
    """
    rng = random.Random(f"chapter-{number}")
    parts = [f"Глава {number}. {_place_name(rng).capitalize()}"]
    size = len(parts[0])
    while size < chars:
        block = paragraph(rng, rng.randrange(3, 8))
        parts.append(block)
        size += len(block) + 2
    return "\n\n".join(parts)


def chapter_note(number: int) -> str:
    """A short Russian note on chapter `number`, as the notes file would hold it."""
    rng = random.Random(f"note-{number}")
    return f"Глава {number}: {paragraph(rng, 6)}"
