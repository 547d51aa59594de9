"""Translated editions: gettext catalogs of a notebook's prose, kept in sync with the English source.

The English percent source is the only source. ``units`` cuts its prose into translatable units
(markdown paragraphs and exercise instructions), each with a context taken from its heading path.
``catalog`` reads and writes one gettext PO file per notebook and language with polib, merges a
catalog with the current units the way ``msgmerge`` does, and lists what has drifted: missing,
stale (fuzzy, with the English change as a diff), orphaned, and translations whose numbers,
formulas or code differ from the English. ``render`` writes the translated source; ``glossary``
flags a course term rendered two ways.
"""
