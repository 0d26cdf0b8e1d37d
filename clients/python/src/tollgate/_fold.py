"""The account fold of FAIL_OPEN's allowance (api/client/fold.go).

An account is folded as tollgate folds it (authguard's NormalizeAccount,
RFC 8265's UsernameCaseMapped profile on each word), so that every spelling
tollgate counts as one account shares one allowance: white space is
collapsed, and each word is width folded ("ａｌｉｃｅ" is "alice"), loses its
zero-width joiners and non-joiners, is case folded in full ("Straße" is
"strasse", "İ" is "i"), loses a dot above on i or j, is lower-cased and put
in NFC. An account tollgate would refuse is folded all the same: it gets a
key of its own.

The Unicode data is :mod:`unicodedata`'s, of the running Python's version
(``unicodedata.unidata_version``), where tollgate's is that of the
golang.org/x/text it is built with. Case folding and normalisation do not
change for a character once it is assigned, and tollgate refuses characters
its own version does not assign, so a Python of a newer version folds
every account tollgate accepts as tollgate does; one of an older version
(3.9 and 3.10 have Unicode 13, 3.11 has 14) differs only on accounts with
characters it does not know. The shared vectors
(clients/testdata/account_fold.json) hold the fold to tollgate's own.

This module is private: its names may change without notice.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Dict

__all__ = ["fold_account"]

#: Go's unicode.IsSpace: the white space strings.Fields splits on (str.split
#: splits on more: U+001C to U+001F).
_GO_SPACE = re.compile("[\t\n\v\f\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")

#: Printable ASCII and ASCII white space, on which the fold is lower case.
_ASCII = re.compile("[\t\n\v\f\r\x20-\x7e]*")


def _width_table() -> Dict[int, str]:
    """golang.org/x/text/width's Fold: each full- and half-width form
    (decomposition type <wide> or <narrow>) to its usual form. All of them
    are U+3000 and the Halfwidth and Fullwidth Forms block."""
    table: Dict[int, str] = {}
    for cp in [0x3000, *range(0xFF00, 0xFFF0)]:
        kind, _, to = unicodedata.decomposition(chr(cp)).partition(" ")
        if kind in ("<wide>", "<narrow>"):
            table[cp] = "".join(chr(int(h, 16)) for h in to.split())
    return table


_WIDTH = _width_table()


def fold_account(s: str) -> str:
    """s folded as tollgate folds an account, for the allowance's key."""
    if _ASCII.fullmatch(s):
        return " ".join(w for w in _GO_SPACE.split(s) if w).lower()
    words = (_fold_word(w) for w in _GO_SPACE.split(s))
    return " ".join(w for w in words if w)


def _fold_word(w: str) -> str:
    # authguard's enforceUserpart without its refusals, in its order: width
    # folding, the joiners dropped, NFD, case folding and the dot above
    # dropped, then the profile's width folding, lower case and NFC.
    w = unicodedata.normalize("NFD", w.translate(_WIDTH).replace("\u200c", "").replace("\u200d", ""))
    w = _drop_dot_above(w.casefold())
    return unicodedata.normalize("NFC", w.translate(_WIDTH).lower())


def _drop_dot_above(w: str) -> str:
    """w, decomposed and case folded, without each U+0307 COMBINING DOT
    ABOVE on i or j that comes before any other mark above: it takes the
    place of the letter's own dot, so "i\\u0307" (what İ case folds to) is
    "i"."""
    if "\u0307" not in w:
        return w
    out = []
    base = ""  # the last character of combining class 0
    mark_above = False  # a mark above has followed base
    for c in w:
        ccc = unicodedata.combining(c)
        if c == "\u0307" and base in ("i", "j") and not mark_above:
            continue
        if ccc == 0:
            base, mark_above = c, False
        elif ccc == 230:
            mark_above = True
        out.append(c)
    return "".join(out)
