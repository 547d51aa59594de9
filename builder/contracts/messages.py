"""What the checks print and raise for a student, one table in the notebook's language.

``MESSAGES`` holds the English; a translated edition follows it with a ``MESSAGES.update({...})``
line built from ``translations/<language>/messages.po`` (``builder/translation/messages.py``). Keys
are short names for sentences with ``{fields}``; a usual cause or a property name of a contract is
its own English text, so ``in_language`` finds it whatever check raised it. Errors of argument
guards (TypeError, ValueError) are for programmers and stay English.
"""

__all__ = ["MESSAGES", "say", "in_language", "shown_label", "key_label", "tr"]

MESSAGES = {
    # exercise labels and section names: the keys stay "Exercise N" for the grader, the reader sees these words
    "Exercise": "Exercise",
    "Module": "Module",
    # check_exercise
    "pass": "{label}: PASS, every contract property of {name} holds",
    "reference in place": "{label}: the reference solution of {name} is in place, not yours. Fix your cell, run it, then run this one.",
    "not attempted, reference": "{label}: not attempted yet; later cells use the reference solution",
    "not attempted, waiting": "{label}: not attempted yet; the cells that need {name} wait for it",
    "waits for": "{label}: waits for {waited}, which {name} uses; finish {waited} first, then run this cell again",
    "your frames": "Your code raised {error} here (the course's frames are left out):",
    "crash property": "the contract check runs to the end on this implementation",
    "crash input": "{label}'s contract inputs",
    "crash expected": "a result the contract can judge",
    "crash hint": "the traceback above this message shows the line of {name} that raised",
    "failed reason": "{name} failed '{property}'",
    "crash reason": "{name} broke its contract check ({error})",
    "go on, reference": ("{name} now names the reference solution of {label}, so the cells after this one run on it: click this "
                         "cell and choose Runtime → Run after (Colab), or select the next cell and choose Run → Run Selected Cell "
                         "and All Below (JupyterLab). show_reference('{label}') prints the solution; fix your cell and run it "
                         "again, which gives {name} back your own code, then run this one."),
    "go on, waiting": "fix {name}, run its cell and this one again; the cells that need {name} wait until it passes.",
    # a contract violation and a failed notebook check
    "violation": "contract property '{property}' failed",
    "on input": "on input",
    "expected": "expected",
    "actual": "actual",
    "usual cause": "usual cause",
    "to go on": "to go on",
    "check failed": "check failed: {claim}",
    "a true value": "a true value",
    "numbers of shape": "numbers of shape {shape}",
    "shape": "shape {shape}",
    "close expected": "{value} at index {index} (tolerance atol={atol}, rtol={rtol})",
    "close actual": "{value}; {count} of {size} entries disagree, largest |difference| {worst}",
    "not finite": "not finite (NaN or infinity)",
    "library error": "{error}: {message}",
    # report_section and exercise_summary
    "section pass": "{section}: PASS",
    "section waits": "{section}: not judged yet; some cells wait for {labels}",
    "section on reference": "{section}: the checks hold, but with the reference solution standing in for {labels}: not a pass of your own code yet",
    "and more": "{labels} and {count} more",
    "none": "none",
    "summary passed": "Exercises passed with your own code: {labels}",
    "summary failed": "Exercises failed: {labels}",
    "summary not attempted": "Exercises not attempted: {labels}",
    "summary first failure": "First failing check: the check cell of {label} ({reason}); fix that exercise first",
    "references used": "All {count} reference values of {source} were used or checked by a cell.",
    "references waiting": ("{used} of {count} reference values of {source} were used or checked; the other {left} wait with the "
                           "cells that wait for {labels}"),
    # judge_prediction: a predict-then-run exercise
    "prediction missing": ("{label}: no prediction yet (set it above and run that cell, then this one). The measured answer "
                           "is ({measured}): {explanation}"),
    "prediction right": "{label}: you predicted ({prediction}), right: {explanation}",
    "prediction wrong": "{label}: you predicted ({prediction}), not what the measurement says, which is ({measured}): {explanation}",
    # the header under a notebook's title (written by the builder, not printed by a check)
    "provenance": ("*Provenance: course builder {version}; reference `{path}`, SHA-256 `{sha256}`. "
                   "Licence: text and figures CC BY-SA 4.0, code MIT.*"),
    # the graded edition's waiting cells
    "cell waits": "This cell waits for {label}: run it again once {label} passes its check.",
    # a boolean mask a contract compares entry by entry
    "wrong mask entry": "{mask}; first wrong entry at (query, key) = {where}",
    # a contract judged as a table of properties (partial credit)
    "properties": "properties",
    "properties hold": "{held} of the {count} properties of this exercise hold",
    # the grader's feedback (builder/grade): one line each, in the submission's language
    "grade pass": "PASS: every contract property of {names} holds.",
    "grade not done": "NOT DONE: {names} still raises NotImplementedError, as the stub does: {error}",
    "grade fail": "FAIL: {names} breaks its contract.",
    "grade error": "ERROR: {names} raised {error}: {message}",
    "grade an exception": "an exception",
    "grade environment": ("NOT GRADED (grading environment): the process running your code could not import {module}, which "
                          "the course provides; this is the grading machine's fault, not yours, and the exercise will be graded again."),
    "grade properties": "each property of this exercise:",
    "grade property holds": "  holds: {property}",
    "grade property fails": "  fails: {property}",
    "grade where": "at line {line} of {cell}, in {name}",
    "grade own cell": "your own cell {number}",
    "grade exercise cell": "your {label} cell",
    "grade missing cell": "MISSING: the submission has no {label} cell, so {names} was not graded.",
    "grade missing names": "MISSING: your {label} cell does not define {names}.",
    "grade syntax": "ERROR: your {label} cell does not compile: SyntaxError at line {line}: {message}",
    "grade defining": "ERROR: defining your {label} code raised {error}: {message}",
    "grade defining failed": "ERROR: defining your {label} code failed; the process running it said:",
    "grade note skipped": "Note: line {line} of your own cell {number} raised {error} and was skipped.",
    "grade note shadows": ("Note: your {names} shares a name with the course's; your code used yours, and the course's own "
                           "code kept the course's."),
    "grade timed out": "TIMED OUT after {seconds} s: the check of {label} did not finish (an infinite loop, or code far too slow).",
    "grade ended": "ERROR: the process checking {label} ended ({how}) before it gave a verdict.",
    "grade check stopped": "ERROR: the check stopped with {error}: {message}",
    "grade killed parent": ("ERROR: your code killed the process that runs it (its parent, the course process), so {label} "
                            "could not be judged. Grading went on with the next exercise."),
    "grade not graded": "NOT GRADED: {reason}",
    "grade page title": "Feedback for {id}",
    "grade page score": "Score: {score} of {most} points",
    "grade page not graded": "Not graded",
    "grade page exercise": "Exercise",
    "grade page points": "Points",
    "grade page feedback": "Feedback",
}


def say(key, **fields):
    """The message ``key`` of ``MESSAGES`` in the notebook's language, its ``{fields}`` filled in."""
    if not isinstance(key, str) or key not in MESSAGES:
        raise ValueError(f"no message {key!r}: say() takes a key of MESSAGES, such as 'pass' or 'summary failed'")
    try:
        return MESSAGES[key].format(**fields)
    except (KeyError, IndexError) as exc:
        raise ValueError(f"the message {key!r} needs the field {exc}; pass it as a keyword argument") from None


def in_language(text, depth=0):
    """A contract's text (usual cause, property, input, value) in the notebook's language: its translation, or itself.

    A text is looked up whole, then as translated texts and templates (``"shape {tuple(x.shape)}"``, their
    fields matched and carried over) joined by ", ", "; " or ": ", so ``case + ", eps=0"`` is translated too; what no
    entry matches (code, numbers) stays as it is. A wrapped exception (``RuntimeError: ...``) keeps its own text.
    """
    import re

    if not isinstance(text, str):
        return text
    if text in MESSAGES:
        return MESSAGES[text]
    raised = re.fullmatch(r"([A-Z]\w*(?:Error|Exception|Warning)): (.+)", text, re.DOTALL)
    if raised and "library error" in MESSAGES:
        return say("library error", error=raised.group(1), message=raised.group(2))
    field = r"\{[^{}]*\}"
    if depth > 3 or not any("{" in key for key in MESSAGES if MESSAGES[key] != key and " " in key):
        return text  # an English edition: no translated templates, nothing to look up in parts

    def templates():
        """(English, its fields, pattern, translation) of each translated text of two words or more, compiled once per table."""
        cache = getattr(in_language, "cache", None)
        if cache is None or cache[0] != len(MESSAGES):
            found = []
            for english, translated in MESSAGES.items():
                if translated == english or (" " not in english.strip(",; ") and "{" not in english):
                    continue
                if english[:2] in (", ", "; ", ": ") and translated[:2] in (", ", "; ", ": "):
                    english, translated = english[2:], translated[2:]  # a clause the contract appends to an input
                pieces = re.split(f"({field})", english)
                pattern = "".join(re.escape(piece) if i % 2 == 0 else "(.+?)" if i < len(pieces) - 2 or pieces[-1]
                                  else r"((?:\([^()]*\)|\[(?:[^\[\]]|\[[^\[\]]*\])*\]|[^,;:\s])+)" for i, piece in enumerate(pieces))
                found.append((pieces[1::2], re.compile(pattern + r"(?=$|[,;:] | )", re.DOTALL), translated))
            cache = in_language.cache = (len(MESSAGES), found)
        return cache[1]

    def top_level(separator):
        """The first index of ``separator`` in ``text`` outside brackets and quoted values, or -1."""
        level, quote = 0, ""
        for i, char in enumerate(text):
            if quote:
                quote = "" if char == quote else quote
            elif char in "'\"" and (i == 0 or text[i - 1] in " =([{"):  # a quoted value, not an apostrophe
                quote = char
            elif char in "([{":
                level += 1
            elif char in ")]}":
                level -= 1
            elif level == 0 and text.startswith(separator, i):
                return i
        return -1

    best = None
    for fields, pattern, translated in templates():
        match = pattern.match(text)
        if match and (best is None or match.end() > best[0].end()):
            best = (match, fields, translated)
    if best is not None:
        match, fields, translated = best
        values = {}
        for name, value in zip(fields, match.groups()):
            values.setdefault(name, in_language(value, depth + 1))
        head = re.sub(field, lambda m: values.get(m.group(0), m.group(0)), translated)
        rest = text[match.end():]
        if rest[:2] in (", ", "; ", ": "):
            return head + rest[:2] + in_language(rest[2:], depth + 1)
        return head + in_language(rest, depth + 1)  # "" or a clause that opens with a space (" with logit 3.0")
    cuts = [at for at in (top_level(", "), top_level("; "), top_level(": ")) if at > 0]
    if not cuts:
        return text
    at = min(cuts)
    return in_language(text[:at], depth + 1) + text[at:at + 2] + in_language(text[at + 2:], depth + 1)


def tr(text):
    """A figure's label, legend, title or bar label marked for translation: in a notebook's own cell the translated
    edition writes its translation in place (from the notebook's catalog); in an inlined helper it is looked up in the
    checks' table (from messages.po). Either way the English source holds only English."""
    return MESSAGES.get(text, text) if isinstance(text, str) else text


def shown_label(label):
    """An exercise or section label as the reader sees it: "Exercise 3" in the reader's word for "Exercise" (the table's)."""
    word, _, rest = str(label).partition(" ")
    return f"{MESSAGES[word]} {rest}" if word in ("Exercise", "Module") and rest else str(label)


def key_label(label):
    """The grader's key of a label the reader may type in either language: the reader's word and N -> "Exercise N"."""
    word, _, rest = str(label).partition(" ") if isinstance(label, str) else ("", "", "")
    return f"Exercise {rest}" if rest and word == MESSAGES["Exercise"] else label
