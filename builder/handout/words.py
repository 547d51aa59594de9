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
        "licence": "Licence",
        "licence_terms": "text and figures CC BY-SA 4.0, code MIT",
        "index_title": "Course handouts",
        "index_intro": "Every module of the course as a page to read offline or print: the full handout with the code, "
                       "and the reading handout without it.",
        "module": "Module",
        "summary": "What it covers",
        "time": "Time",
        "hours": "about {hours} h",
        "full_link": "full handout (with code)",
        "reading_link": "reading handout",
        "language_name": "English",
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
        "licence": "Лицензия",
        "licence_terms": "текст и рисунки — CC BY-SA 4.0, код — MIT",
        "index_title": "Конспекты курса",
        "index_intro": "Каждый модуль курса — страница для чтения без сети или для печати: полный конспект с кодом "
                       "и конспект для чтения без кода.",
        "module": "Модуль",
        "summary": "О чём он",
        "time": "Время",
        "hours": "около {hours} ч",
        "full_link": "полный конспект (с кодом)",
        "reading_link": "конспект для чтения",
        "language_name": "Русский",
    },
}

# A reading handout has no code, so it leaves out what tells a reader how to run the code: a Markdown paragraph that
# opens with one of these bold labels, and an output that starts with one (a prediction's verdict). Per language,
# as the notebooks and their catalogs write them.
RUN_LABELS = {
    "en": ("How to run this notebook", "When a check stops the notebook", "Predict, then run"),
    "ru": ("Как запускать этот ноутбук", "Когда проверка останавливает ноутбук", "Предскажите, потом запустите",
           "Предскажите, затем запустите"),
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
