"""What to look for when a field declares no locators, and the finds that do not need one.

Which field names get which of these is said by the workflow's profiles (`profiles`); the
mechanisms are here:

- Labels: a field with label wordings in a profile is looked for by them (`invoice_number` ->
  "Invoice No", "Invoice Number", "Inv #", ...); any other name as its own words ("po_number" ->
  "Po Number", plus "Po No" and "Po #" for `*_number`). The value is taken to the right of the
  label or below it.
- Document dates (`date_candidates`): any date printed on the page (the first one scores
  highest, and higher still when it is the only date printed), so a receipt whose date has no
  label still gets one; when none is legible, a garbled date right after a "Date" label is
  repaired if only one reading fits (`date_repair`). Other dates (`due_date`, ...) need their
  label, because the first date on a page is rarely theirs.
- Issuer's name and address by position: see `position` and `address`.
- Currency (`currency_candidates`): the currency codes and symbols printed on rows that hold an
  amount, the most frequent winning. This one also runs next to declared locators, because it
  only proposes currencies actually printed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from docflow.extraction.definition import FieldDef, LabelLocator, Locator
from docflow.extraction.fields.candidates import Candidate, FieldSpec
from docflow.extraction.fields.date_repair import repair_date, repair_textual
from docflow.extraction.fields.layout import compact, join_words
from docflow.extraction.fields.money import NumberError, currency_code, parse_money
from docflow.extraction.fields.view import DocumentView
from docflow.extraction.model import Word
from docflow.extraction.profiles import Profile

DATE_SCAN_UNIQUE, DATE_SCAN_FIRST, DATE_SCAN_LATER = 0.85, 0.7, 0.5
DATE_REPAIRED = 0.45
_REPAIR_WORDS = 3
CURRENCY_SCORE = 0.9


def default_locators(field: FieldDef, profile: Profile) -> list[Locator]:
    """Label locators for a field that declares none: the profile's wordings for its name, or
    the name's own words."""
    labels = profile.labels.get(field.name)
    if labels is None:
        words = field.name.replace("_", " ").title()
        labels = (words,)
        if field.name.endswith("_number"):
            stem = words.rsplit(" ", 1)[0]
            labels = (words, f"{stem} No", f"{stem} #")
    return [LabelLocator(labels=list(labels), direction="any")]


def date_candidates(view: DocumentView, spec: FieldSpec) -> list[Candidate]:
    """Every date printed on the pages, in reading order; the first scores highest."""
    found: list[Candidate] = []
    for page in view.pages:
        for row in page.rows:
            found.extend(_dates_in(spec, row.words, row.page, first=not found))
    if found and len({c.value for c in found}) == 1:
        found[0] = replace(found[0], score=DATE_SCAN_UNIQUE)  # nothing to confuse it with
    return found or repaired_dates(view, spec)


def repaired_dates(view: DocumentView, spec: FieldSpec) -> list[Candidate]:
    """When no date is printed legibly, the garbled ones right after a "Date" label that one
    reading alone fits (see `date_repair`), the first scoring highest."""
    found: list[Candidate] = []
    for page in view.pages:
        for row in page.rows:
            for i, word in enumerate(row.words):
                labelled = compact(word.text).startswith("date")
                run = row.words[i + 1 : i + 1 + _REPAIR_WORDS] if labelled else (word,)
                text = join_words(run) if run else ""
                repaired = repair_date(text, spec.date_order) if labelled else repair_textual(text)
                if repaired is None:
                    continue
                score = DATE_REPAIRED if not found else DATE_REPAIRED * DATE_SCAN_LATER
                value = repaired.isoformat()
                found.append(spec.candidate(run, row.page, score, "pattern", value))
    return found


def _dates_in(
    spec: FieldSpec, words: tuple[Word, ...], page: int, *, first: bool
) -> list[Candidate]:
    found: list[Candidate] = []
    start = 0
    while start < len(words):
        for length in range(min(4, len(words) - start), 0, -1):
            run = words[start : start + length]
            if not any(ch.isdigit() for ch in join_words(run)):
                continue
            score = DATE_SCAN_FIRST if first and not found else DATE_SCAN_LATER
            candidate = spec.candidate(run, page, score, "pattern")
            if candidate.error is None:
                found.append(candidate)
                start += length - 1
                break
        start += 1
    return found


def currency_candidates(view: DocumentView, spec: FieldSpec) -> list[Candidate]:
    """One candidate per currency printed on the pages, scored by how often it appears."""
    seen: Counter[str] = Counter()
    where: dict[str, tuple[Word, int]] = {}
    for page in view.pages:
        for row in page.rows:
            if not any(_is_amount(w.text) for w in row.words):
                continue  # "SDN BHD" is a company form, not Bahraini dinars
            for word in row.words:
                code = _currency_of(word.text)
                if code is not None:
                    seen[code] += 1
                    where.setdefault(code, (word, row.page))
    total = sum(seen.values())
    found = []
    for code, count in seen.most_common():
        word, number = where[code]
        score = CURRENCY_SCORE * count / total
        candidate = spec.candidate((word,), number, score, "currency", code)
        if candidate.error is None:
            found.append(candidate)
    return found


def _is_amount(text: str) -> bool:
    if not any(ch.isdigit() for ch in text):
        return False
    try:
        parse_money(text.strip(" :;,."))
    except NumberError:
        return False
    return True


def _currency_of(text: str) -> str | None:
    token = text.strip(" .,:;()")
    code = currency_code(token)
    if code is not None and (len(token) > 1 or not token.isalpha()):
        return code
    if any(ch.isdigit() for ch in token):
        try:
            return parse_money(token).currency
        except NumberError:
            return None
    return None
