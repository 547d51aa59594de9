"""The body of each ``python -m builder`` command: ``(course, args) -> exit code``.

Heavy libraries (nbclient, nbconvert, bs4, playwright) are imported inside the commands that use them,
so ``build`` and ``check`` start fast; so is ``editions`` (jupytext and nbformat), which a ``check`` whose
record is current never needs.
"""

import argparse
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from . import exits, files, frozen
from .progress import Progress


def build(course, args, *, sources: dict | None = None) -> int:
    """Refresh inlined regions and embedded references, and re-pair every edition of each notebook; a failing build writes nothing.

    A build that succeeds leaves what it derived in build/check-cache.json, so a later check need not derive it again.
    """
    # ``sources`` maps a notebook source to new text to build from and write with everything else (adopt). The
    # docstring above is the command's --help, so what only callers need to know stays here.
    from . import drift, editions
    from .check_cache import Record

    chosen = course.select(getattr(args, "names", None))
    record = Record(course, use=False)
    keys = [record.notebook_key(nb) for nb in chosen]  # the sources as read, before anything is derived from them
    results = [editions.editions(course, nb, (sources or {}).get(nb.source)) for nb in chosen]
    # Every generated file as it is now: one saved (from Jupyter, Colab) after this point is never overwritten.
    seen = {path: files.read_if_exists(path) for result in results for path in result.generated}
    problems = reference_problems(chosen)
    if problems:  # never embed a reference its generator no longer reproduces
        raise files.MalformedFile("refusing to embed references that do not reproduce: " + "; ".join(str(p) for p in problems)
                                  + ". Find out why; if the change is meant, run `python -m builder refs --update`")
    editions.refuse_unsafe_translations(results)
    if not getattr(args, "force", False):
        drift.refuse_lost_edits(course, results)
    for note in editions.fallback_notes(results):  # translations never block English: the unit keeps its English
        print(f"build: warning: {note}; translate it in translations/ (`python -m builder translations` lists each)")
    outputs = {path: text for result in results for path, text in result.expected.items()}
    for path in files.write_all(outputs, unchanged_since={**seen, **{result.nb.source: result.on_disk for result in results}}):
        print(f"wrote {course.shown(path)}")
    for key, result in zip(keys, results):  # what check would derive; kept only where the build left the source as it read it
        record.put(key, result.findings, result.generated, result.nb)
    record.save()
    print("build: up to date")
    return exits.OK


def check(course, args) -> int:
    """Fail on stale or hand-edited regions, generated files that differ, or references that do not reproduce; write only build/check-cache.json, and only on success.

    Units not translated yet are warnings (their editions keep the English), errors with
    --strict-translations or `translations_strict = true` in [tool.course].
    """
    from .check_cache import Record

    chosen = course.select(getattr(args, "names", None))
    strict = strict_translations(course, args)
    record = Record(course, use=getattr(args, "cache", True))
    findings: list[object] = [f for nb in chosen for f in notebook_findings(course, nb, record)]
    findings += reference_problems(chosen) + course_findings(course, record)
    findings += grade_config_problems(course)
    errors = [f for f in findings if strict or not getattr(f, "untranslated", False)]
    warnings = [f for f in findings if f not in errors]
    if not errors:  # a check that fails writes nothing, not even its record
        record.save()
    for finding in errors + warnings:
        print(f"warning: {finding}" if finding in warnings else finding)
        diff = getattr(finding, "diff", "")
        if diff:
            print(diff)
    untranslated = untranslated_summary(f for f in findings if getattr(f, "untranslated", False))
    if errors:
        if untranslated and strict:
            print(f"check: {untranslated}; translations are strict here (translations_strict in [tool.course], or "
                  "--strict-translations): translate them, or check with --no-strict-translations", file=sys.stderr)
        print(f"check: {len(errors)} problem(s); the messages above say which command fixes each", file=sys.stderr)
        return exits.FAILED
    if untranslated:
        print(f"check: warning: {untranslated}; their editions keep the English, marked untranslated "
              "(`python -m builder translations` lists them; --strict-translations makes this an error)")
    print(f"check: {len(chosen)} notebooks, their student and translated editions, regions, pairs and references are in sync")
    return exits.OK


def grade_config_problems(course) -> list[str]:
    """Invalid points and [tool.course.grade] values, with pyproject.toml's line (the grader would refuse them later)."""
    from .grade import report

    return report.config_problems(course)


def notebook_findings(course, nb, record) -> list:
    """One notebook's findings: replayed from ``record`` when its inputs and generated files are as recorded, else derived."""
    key = record.notebook_key(nb)
    found = record.notebook_findings(key)
    if found is not None:
        return found
    from . import drift, editions

    result = editions.editions(course, nb)
    record.put(key, result.findings, result.generated, nb)
    return result.findings + drift.pair_findings(course, result)


def course_findings(course, record) -> list:
    """The course-wide findings: each language's message catalog, and the catalogs no notebook owns."""
    key = record.course_key()
    found = record.course_findings(key)
    if found is None:
        found = course_wide_findings(course)
        record.put(key, found)
    return found


def course_wide_findings(course) -> list:
    """Derived from the catalogs, builder/contracts and the config alone, never a notebook source (the record's course key relies on it)."""
    from . import editions
    from .translation import lint

    return editions.message_findings(course) + lint.course_violations(course) + lint.other_catalog_findings(course)


def strict_translations(course, args) -> bool:
    """Whether untranslated units are errors: --[no-]strict-translations, else the course's translations_strict."""
    chosen = getattr(args, "strict_translations", None)
    return course.translations_strict if chosen is None else chosen


def untranslated_summary(found) -> str:
    """'3 unit(s) not translated yet (translations/ru/x.po: 2 missing, 1 stale)', or '' when there are none."""
    counts: dict[str, dict[str, int]] = {}
    for finding in found:
        kind = finding.kind
        per_kind = counts.setdefault(str(finding.path), {})
        per_kind[kind] = per_kind.get(kind, 0) + 1
    total = sum(n for per_kind in counts.values() for n in per_kind.values())
    if not total:
        return ""
    where = "; ".join(f"{path}: " + ", ".join(f"{n} {kind}" for kind, n in sorted(per_kind.items())) for path, per_kind in sorted(counts.items()))
    return f"{total} unit(s) not translated yet ({where})"


def adopt(course, args) -> int:
    """Copy cells edited in a notebook's .ipynb (in Jupyter or Colab) into its .py source, then build; refuse, writing nothing, when that would lose work."""
    from . import adoption, drift, editions

    adopted = {}
    for nb in course.select(args.names):
        result = editions.editions(course, nb)
        shown = course.shown(nb.ipynb)
        committed = files.read_text(nb.ipynb, shown, what="notebook")
        if committed == result.expected[nb.ipynb]:
            print(f"adopt: {shown} holds no edit of its own")
            continue
        adoption.readable_notebook(committed, shown)
        if not drift.ipynb_edits(nb.ipynb, committed, result.expected[nb.ipynb]):
            print(f"adopt: {shown} holds no edit of its own")
            continue
        code, blocked = adoption.adopt_blockers(course, nb, committed, result.expected[nb.ipynb])
        if blocked:  # refused before anything is written
            print(f"error: {blocked}", file=sys.stderr)
            return code
        adopted[nb.source] = adoption.adopted_source(course, nb)
        print(f"adopt: copying the edits of {shown} into {course.shown(nb.source)}")
    # One build writes the adopted sources with everything else, all or nothing. One policy with build:
    # an adopted English edit leaves its translations behind, and they keep the English until translated.
    return build(course, argparse.Namespace(names=args.names, force=False), sources=adopted)


def reference_problems(chosen) -> list[frozen.Problem]:
    """Problems with the committed reference files of the chosen notebooks."""
    return [p for nb in chosen for p in frozen.check(nb.reference_path, nb.reference)]


def report_mentions(course, nb, changes) -> None:
    """List each place a notebook or its translations write a changed reference value by hand, so none is left stale."""
    sources = [nb.source] + [nb.translated(language).catalog for language in course.languages]
    texts = {course.shown(p): p.read_text(encoding="utf-8") for p in sources if p.exists()}
    found = frozen.mentions(changes, texts)
    for line in found:
        print(f"  {line}")
    if found:
        print(f"  {len(found)} place(s) above write a changed value by hand (code, prose or figure data): fix each, "
              "or read it from the embedded reference instead")


def references(course, args) -> int:
    """Recompute the reference metrics: prove the committed bytes reproduce, or rewrite them on purpose."""
    if args.update:
        for nb in course.notebooks:
            old = json.loads(nb.reference_path.read_text(encoding="utf-8")) if nb.reference_path.exists() else {}
            changed = frozen.update(nb.reference_path, nb.reference)
            print(f"{'wrote' if changed else 'unchanged'} {course.shown(nb.reference_path)}")
            if changed:
                report_mentions(course, nb, frozen.changed_values(old, json.loads(nb.reference_path.read_text(encoding="utf-8"))))
        print("now run `python -m builder build` so the notebooks embed the new references")
        return exits.OK
    problems = reference_problems(course.notebooks)
    for problem in problems:
        print(problem)
    if not problems:
        print(f"refs: {len(course.notebooks)} reference files reproduce byte for byte")
    return exits.FAILED if problems else exits.OK


def execute(course, args, *, kernel_name: str = "python3", out: Path | None = None, student_too: bool = False,
            reinserted: bool = True) -> int:
    """Run each notebook alone in an empty folder through nbclient; report times, fail on an error or a breached budget."""
    runs = run_notebooks(course, course.select_editions(args.names), args, kernel_name=kernel_name, out=out, student_too=student_too,
                         reinserted=reinserted)
    return exits.OK if all(ok for _, ok in runs.values()) else exits.FAILED


def run_notebooks(course, chosen, args, *, kernel_name: str = "python3", out: Path | None = None, student_too: bool = False,
                  reinserted: bool = True) -> dict:
    """Execute ``chosen`` into the output folder and report each; map each name to (its RunResult, passed with budget)."""
    from . import execute as runner

    out = getattr(args, "out", None) or out or course.executed_dir
    if chosen:
        files.require_writable(out, "--out")
    runs = {}
    last = runner.last_seconds([edition_dir(out, nb) / nb.ipynb.name for nb in chosen])  # the first estimate, before a run ends
    progress = Progress("execute", len(chosen), seconds_each=last) if chosen else None
    for nb in chosen:
        if progress is not None:  # there is one whenever a notebook is chosen
            progress.step(f"{nb.edition} [{nb.language}]")
        result = runner.run(nb.ipynb, edition_dir(out, nb), timeout=args.timeout, kernel_name=kernel_name)
        print(runner.report(result, args.budget), flush=True)
        ok = not result.error and (args.budget is None or result.seconds <= args.budget)
        if student_too or getattr(args, "student", False):
            ok &= run_student_editions(nb, edition_dir(out, nb) / "student", args.timeout, kernel_name, reinserted=reinserted)
        runs[nb.edition] = (result, ok)
    if progress:
        progress.close()
    return runs


def edition_dir(out: Path, nb) -> Path:
    """Where one edition's executed copy goes: ``out`` for English, ``out/<language>`` for a translation."""
    return out if nb.language == "en" else out / nb.language


def run_student_editions(nb, out: Path, timeout: int, kernel_name: str, *, reinserted: bool = True) -> bool:
    """Run a student edition as shipped and (unless ``reinserted`` is False) with its solutions re-inserted; True when both behave."""
    from . import execute as runner
    from . import pairing, student

    source = nb.source.read_text(encoding="utf-8")
    labels = [e.label for e in student.exercises(pairing.read_source(source))]
    shipped = runner.run(nb.student_ipynb, out, timeout=timeout, kernel_name=kernel_name, allow_errors=True)
    problems = student.shipped_run_problems(shipped.errors, labels)
    verdict = "; ".join(problems) or f"reaches the end, its {len(labels)} exercises not attempted"
    print(f"{nb.name} student edition as shipped ({shipped.seconds:.1f} s): {verdict}", flush=True)
    if not reinserted:
        return not problems
    with tempfile.TemporaryDirectory() as tmp:
        solved = Path(tmp) / f"{nb.name}.ipynb"
        solved.write_text(pairing.to_ipynb(student.reinsert_solutions(nb.student_source.read_text(encoding="utf-8"), source)))
        result = runner.run(solved, timeout=timeout, kernel_name=kernel_name)
    print(f"{nb.name} student edition with solutions re-inserted ({result.seconds:.1f} s): {'FAILED' if result.error else 'passes'}", flush=True)
    if result.error:
        print(f"  FAILED at {result.where or result.error}")
    return not problems and not result.error


def colab(course, args) -> int:
    """Execute every notebook, its solution and student editions, once each on a kernel in a venv pinned to Colab's stack (created when missing).

    The student edition with its solutions re-inserted runs the solution's code again, so the canary leaves it to
    `execute --student` and the tests, which run it on the ordinary kernel.
    """
    from . import colab as pinned

    venv = args.venv if args.venv.is_absolute() else course.root / args.venv
    python, note = (args.python, f"using --python {args.python}") if args.python else pinned.default_python()
    print(f"colab: copying {pinned.runtime_line()}\ncolab: {note}", flush=True)
    # Where Colab's Python is missing the copy is approximate anyway: Colab's torch may then give way to the builder's own.
    approximate = not args.python and python == sys.executable and args.torch == pinned.DEFAULT_TORCH
    versions = pinned.create(venv, python=python, torch=args.torch, torch_index=args.torch_index,
                             fallback_torch=pinned.own_torch() if approximate else None)
    print(pinned.versions_line(versions), flush=True)
    return execute(course, args, kernel_name=pinned.use_kernel(venv), out=args.out or course.colab_dir, student_too=True, reinserted=False)


def html(course, args, *, execute_first: bool = True) -> int:
    """Execute the chosen notebooks (as execute does) and export their offline HTML handouts to dist/handouts, with index.html linking every handout there."""
    import nbformat

    from . import handout
    from .handout.site import write_index

    executed_dir = getattr(args, "out", None) or course.executed_dir
    out_dir = getattr(args, "handouts", None) or course.handouts_dir
    variants = ("reading",) if args.no_input_only else ("full",) if args.full_only else handout.VARIANTS
    files.require_writable(out_dir, "--handouts")
    status, chosen = exits.OK, []
    for nb in course.select_editions(args.names):
        problems = handout.math_problems(nbformat.read(nb.ipynb, as_version=4), nb.edition)
        if problems:  # fail before spending a kernel run on it
            print(f"error: {len(problems)} LaTeX problem(s):\n  " + "\n  ".join(problems), file=sys.stderr)
            status = exits.FAILED
        else:
            chosen.append(nb)
    unexecuted = [nb for nb in chosen if execute_first or not (edition_dir(executed_dir, nb) / nb.ipynb.name).exists()]
    runs = run_notebooks(course, unexecuted, args, out=executed_dir)
    progress = Progress("html", len(chosen)) if chosen else None
    for nb in chosen:
        if progress is not None:  # there is one whenever a notebook is chosen
            progress.step(f"{nb.edition} [{nb.language}]")
        result, ok = runs.get(nb.edition, (None, True))
        status = status if ok else exits.FAILED
        if result is not None and result.error:
            print(f"html: {nb.edition} failed to execute; no handout written", file=sys.stderr)
            continue
        try:
            prov = handout.provenance(course, nb)
            for page in handout.export(edition_dir(executed_dir, nb) / nb.ipynb.name, out_dir, nb.edition, prov, variants, images_from=nb.ipynb.parent):
                print(f"wrote {course.shown(page.path)}: {page.summary()}", flush=True)
        except handout.HandoutError as exc:
            print(f"error: {exc}", file=sys.stderr)
            status = exits.FAILED
    if progress:
        progress.close()
    if status != exits.OK:  # a failed export leaves the index as it was
        return status
    try:
        index = write_index(course, out_dir)
        print(f"wrote {course.shown(index)}: every module in {1 + len(course.languages)} language(s), linking the handouts in {course.shown(out_dir)}")
    except handout.HandoutError as exc:
        print(f"error: {exc}", file=sys.stderr)
        status = exits.FAILED
    return status


def translations(course, args) -> int:
    """Report each translation catalog's drift from its English source; with --update, merge the catalogs as msgmerge does.

    --update keeps every translation: changed English marks its entry fuzzy with the old English kept,
    new English gets an empty entry, and entries whose English is gone become obsolete.
    """
    from . import editions
    from .translation.units import units

    if not course.languages:
        print("translations: [tool.course] translations lists no language", file=sys.stderr)
        return exits.USAGE
    if getattr(args, "typography", False):
        return typeset_catalogs(course)
    problems, strict = 0, strict_translations(course, args)
    outputs: dict[Path, str] = {}
    seen: dict[Path, str | None] = {}
    for nb in course.select(args.names):
        result = editions.editions(course, nb)
        found = units(result.expected[nb.source], course.root)
        for edition in result.translations:
            problems += _catalog_drift(course, edition.catalog, found, course.shown(nb.source), edition.language, args.update, outputs, strict, seen)
    from .translation import messages

    for language in course.languages:  # the checks' messages: one catalog per language, for every notebook
        path = course.root / "translations" / language / messages.CATALOG
        problems += _catalog_drift(course, path, messages.units(course.root), "builder/contracts", language, args.update, outputs, strict, seen)
        if args.update:  # the glossary as Weblate imports it (CSV and TBX), written from glossary.po
            from .translation import catalog as po
            from .translation import glossary

            terms = course.root / "translations" / language / glossary.GLOSSARY
            if terms.exists():
                outputs |= glossary.weblate_files(terms, language, po.load(terms, course.shown(terms)))
    for path in files.write_all(outputs, unchanged_since=seen):  # a translator's save meanwhile is never overwritten
        print(f"wrote {course.shown(path)}")
    return exits.OK if args.update or not problems else exits.FAILED


def typeset_catalogs(course) -> int:
    """Rewrite every catalog of every language in that language's typography, all or nothing."""
    from .translation import lint

    outputs: dict[Path, str] = {}
    seen: dict[Path, str | None] = {}
    refused: list[str] = []
    for language in course.languages:
        paths = sorted((course.root / "translations" / language).glob("*.po"))
        seen |= {path: files.read_if_exists(path) for path in paths}  # read before rewrite parses them: a later save is kept
        written, problems = lint.rewrite(paths, language, course.shown)
        outputs |= written
        refused += problems
    if refused:
        print("\n".join(refused), file=sys.stderr)
        print(f"translations: {len(refused)} rewrite(s) would change an invariant; nothing was written", file=sys.stderr)
        return exits.FAILED
    for path in files.write_all(outputs, unchanged_since=seen):
        print(f"wrote {course.shown(path)}")
    return exits.OK


def _catalog_drift(course, path, found, occurrence: str, language: str, update: bool, outputs: dict, strict: bool, seen: dict) -> int:
    """Print one catalog's drift from its units (merged first with ``update``, into ``outputs``); return the problems."""
    from .diagnostics import UNTRANSLATED_KINDS
    from .translation import catalog as po

    seen[path] = files.read_if_exists(path)  # what this run read: write_all refuses if a save replaced it
    try:
        catalog = po.load(path, course.shown(path))
    except po.CatalogError as exc:
        raise files.MalformedFile(str(exc)) from None
    if update:
        catalog = po.merge(catalog, found, occurrence)
        outputs[path] = po.dumps(catalog, language, occurrence, seen[path])
        outputs[po.template_path(course.root, path)] = po.template(catalog, occurrence)
    drift = po.findings(catalog, found, course.shown(path), language)
    translated = sum(1 for e in catalog if e.msgstr and not e.obsolete and "fuzzy" not in e.flags)
    for finding in drift:
        print(finding)
        if finding.diff:
            print(finding.diff)
    print(f"{course.shown(path)}: {translated} of {len(found)} units translated, {len(drift)} finding(s)")
    return sum(1 for f in drift if strict or f.kind not in UNTRANSLATED_KINDS)


def everything(course, args) -> int:
    """Build, check, execute every solution edition and every student edition as shipped (what students open), then export the HTML handouts.

    --solutions-only leaves the student editions out; --student also runs each with its solutions re-inserted.
    """
    students = not getattr(args, "solutions_only", False)
    chosen = len(course.select_editions(args.names))
    runs = f"{chosen} solution edition(s)" + (f" and {chosen} student edition(s) as shipped" if students else "")
    runs += (", each student edition also with its solutions re-inserted" if getattr(args, "student", False) else "")
    runs += ("" if students else "; --solutions-only leaves out the student editions")
    steps: tuple[tuple[str, Callable[..., int], dict[str, bool]], ...] = (
        ("build", build, {}), ("check", check, {}),
        ("execute", execute, {"student_too": students, "reinserted": bool(args.student)}))
    for number, (name, step, options) in enumerate(steps, start=1):
        print(f"all: stage {number}/4, {name}" + (f": {runs}" if name == "execute" else ""), file=sys.stderr, flush=True)
        code = step(course, args, **options)
        if code != exits.OK:
            return code
    print("all: stage 4/4, html", file=sys.stderr, flush=True)
    return html(course, args, execute_first=False)


def docs(course, args) -> int:
    """Write docs/cli.md, the command-line reference, from the parser (--check: fail when it is stale, writing nothing)."""
    from .cli import reference

    path = course.root / "docs" / "cli.md"
    text = reference()
    if files.read_if_exists(path) == text:
        print(f"docs: {course.shown(path)} is up to date")
        return exits.OK
    if args.check:
        print(f"docs: {course.shown(path)} is stale: run `python -m builder docs`", file=sys.stderr)
        return exits.FAILED
    for written in files.write_all({path: text}):
        print(f"wrote {course.shown(written)}")
    return exits.OK


def new_exercise(course, args) -> int:
    """Add an exercise after a heading: its cell, its check cell, a contract stub, a bug-catalog stub, the build and the catalog entries."""
    from . import authoring

    nb = course.select([args.name])[0]
    for path in files.write_all(authoring.new_exercise(course, nb, args.function, args.after, args.contracts)):
        print(f"wrote {course.shown(path)}")
    code = build(course, argparse.Namespace(names=[nb.name], force=False))
    if code == exits.OK and course.languages:
        code = translations(course, argparse.Namespace(names=[nb.name], update=True, strict_translations=None))
    print("new-exercise: what is left (the default test tier names each one until it is done):")
    print(f"  1. the instructions and solution of {args.function} in {course.shown(nb.source)} (its TODO lines)")
    for line in authoring.stubs_left(course):
        print(f"  2. write the stub at {line}")
    if course.languages:
        print("  3. translate the new entries: `python -m builder translations` lists them")
    return code
