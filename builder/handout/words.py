"""The handout's own words (header, contents, skip link, disclosures, omitted code) in each edition's language."""

from .errors import HandoutError

FURNITURE = {
    "en": {
        "handout": "Handout",
        "reading": "Reading handout (code hidden)",
        "reading_title": "reading handout",
        "commit": "Source commit",
        "builder": "Course builder",
        "reference": "Reference",
        "contents": "Contents",
        "skip": "Skip to the lesson",
        "not_printed": "Code not printed",
        "setup_code": "setup code",
        "answer": "Answer to question {number}",
        "answers": "Answers to the questions",
        "answer_at_end": "The answer is printed at the end of the handout, under “{title}”.",
        "javascript": "JavaScript output omitted from the handout",
        "widget": "interactive widget omitted from the handout",
        "figure": "Figure",
    },
    "ru": {
        "handout": "Конспект",
        "reading": "Конспект для чтения (без кода)",
        "reading_title": "конспект для чтения",
        "commit": "Коммит исходников",
        "builder": "Сборщик курса",
        "reference": "Эталон",
        "contents": "Содержание",
        "skip": "Перейти к уроку",
        "not_printed": "Код не напечатан",
        "setup_code": "код настройки",
        "answer": "Ответ на вопрос {number}",
        "answers": "Ответы на вопросы",
        "answer_at_end": "Ответ напечатан в конце конспекта, в разделе «{title}».",
        "javascript": "вывод JavaScript в конспект не включён",
        "widget": "интерактивный виджет в конспект не включён",
        "figure": "Рисунок",
    },
}

# A disclosure whose summary is only this word gets the numbered summary above.
BARE_ANSWER = {"answer", "answers", "ответ", "ответы", "solution", "решение"}


def furniture(language: str) -> dict[str, str]:
    """The handout's words in ``language``; HandoutError naming the table when the language has none."""
    if language not in FURNITURE:
        raise HandoutError(
            f"the handout has no words for language {language!r} (it has {', '.join(sorted(FURNITURE))}); "
            "add them to FURNITURE in builder/handout/words.py"
        )
    return FURNITURE[language]
