"""The issuer's name as printed, set right: what `position` finds is cleaned here.

Stray marks, a trailing registration number (also one whose closing bracket OCR lost), a document
title before or after the name and the street and town of a one-line sender address are dropped; a
legal form misread by one letter next to a correct one is set right ("SON BHD"), as is the pair
"SDN BHD" misread in both words or with a short misread word after an exact "SDN" ("SDN BILD");
a yen sign next to letters or dots is the letter Y OCR confused it with ("D.I.¥.").
"""

from __future__ import annotations

import itertools
import re

from docflow.extraction.fields.labels import bounded_levenshtein
from docflow.extraction.fields.layout import compact
from docflow.extraction.model import Word

# Words that only a registered company's name carries, in compact form ("B.V." -> "bv").
LEGAL_FORMS = frozenset(
    {
        "sdn",
        "bhd",
        "berhad",
        "ltd",
        "limited",
        "inc",
        "llc",
        "llp",
        "plc",
        "gmbh",
        "ag",
        "sarl",
        "bv",
        "nv",
        "corp",
        "pte",
        "pty",
        "sb",
        "sa",
        "srl",
        "spa",
        "kk",
    }
)
_SPELLED_FORMS = ("SDN", "BHD", "LTD", "INC", "LLC", "GMBH", "PTE", "PTY", "CORP")
_MARKS = re.compile(r"[^\w&(]+")
_REGISTRATION = re.compile(r"[(\[{€]?\w{0,3}\d{5,}-?\s?[A-Z]?[)\]}]?", re.IGNORECASE)
_UNCLOSED = re.compile(r"\s*\([^()]*$")
# OCR reads a printed Y as a yen sign; next to letters or dots it is the letter ("D.I.¥.").
_YEN_AS_Y = re.compile(r"(?<=[A-Za-z.])¥|¥(?=[A-Za-z.])")
TITLE_WORDS = re.compile(
    r"^(tax |simplified |official )?(invoice|receipt|facture|rechnung|factuur)\b[.:]?\s*|"
    r"\s+(tax )?(invoice|receipt|facture|rechnung|factuur)[.:]?$",
    re.IGNORECASE,
)


def clean_name(words: tuple[Word, ...]) -> str:
    """The name without stray marks, a trailing registration number, a document title before or
    after it, or the street and town of a one-line sender address ("Acme AG - Main St 4 -
    Town"); a legal form misread by one letter next to a correct one is set right ("SON BHD")."""
    tokens = [w.text for w in words]
    while tokens and (_MARKS.fullmatch(tokens[0]) or _MARKS.fullmatch(tokens[-1])):
        tokens = tokens[1:] if _MARKS.fullmatch(tokens[0]) else tokens[:-1]
    if len(tokens) > 1 and _REGISTRATION.fullmatch(tokens[-1]):
        tokens = tokens[:-1]
    text = re.sub(r"\s*\([^()]*\d[^()]*\)\s*$", "", " ".join(_legal_spelling(tokens)))
    text = _UNCLOSED.sub("", text) or text  # "(Co. No:" left by a dropped registration number
    parts = re.split(r"\s+[-–|·•]\s+", text)
    if len(parts) > 1 and any(ch.isdigit() for ch in " ".join(parts[1:])):
        text = parts[0]
    return TITLE_WORDS.sub("", text).strip()


def _legal_spelling(tokens: list[str]) -> list[str]:
    fixed = [_YEN_AS_Y.sub("Y", t) for t in _sdn_bhd(tokens)]
    tokens = list(fixed)
    for i, token in enumerate(tokens):
        neighbours = [tokens[j] for j in (i - 1, i + 1) if 0 <= j < len(tokens)]
        if compact(token) in LEGAL_FORMS or not any(compact(n) in LEGAL_FORMS for n in neighbours):
            continue
        core = token.rstrip(".,")
        for form in _SPELLED_FORMS:
            if len(core) == len(form) and bounded_levenshtein(core.upper(), form, 1) == 1:
                spelled = form if core.isupper() else form.title()
                fixed[i] = spelled + token[len(core) :]
                break
    return fixed


def _sdn_bhd(tokens: list[str]) -> list[str]:
    """ "SDN" is always followed by "BHD": a short word misread after it ("SDN BILD", "SON PHD",
    "Sdo Bra") is set right, in the case it was printed in."""
    fixed = list(tokens)
    for i in range(len(tokens) - 1):
        a, b = compact(tokens[i]), compact(tokens[i + 1])
        exact = a == "sdn" and b.startswith("b") and 2 <= len(b) <= 4
        if not exact and not misread_pairs(tokens[i : i + 2]):
            continue
        upper = tokens[i].isupper()
        fixed[i] = ("SDN" if upper else "Sdn") + (tokens[i][len(tokens[i].rstrip(".,")) :])
        fixed[i + 1] = ("BHD" if upper else "Bhd") + (
            tokens[i + 1][len(tokens[i + 1].rstrip(".,")) :]
        )
    return fixed


def misread_pairs(tokens: list[str]) -> int:
    """How many "SDN BHD" pairs OCR misread by a letter in each word ("SON PHD", "san hd")."""
    keys = [compact(t) for t in tokens]
    return sum(
        1
        for a, b in itertools.pairwise(keys)
        if 2 <= len(a) <= 4
        and 2 <= len(b) <= 4
        and bounded_levenshtein(a, "sdn", 1) <= 1
        and bounded_levenshtein(b, "bhd", 1) <= 1
    )
