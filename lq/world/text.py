"""Names and phrases: how the engine matches what a player types and renders what it says."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

ARTICLES = frozenset({"a", "an", "the", "some"})
VOWELS = "aeiou"


def normalize(text: str) -> str:
    """Lower case, single spaces, no trailing punctuation, no leading article."""
    words = text.lower().replace("\t", " ").split()
    while words and words[-1] in {".", "!", "?"}:
        words.pop()
    if words:
        words[-1] = words[-1].rstrip(".!?") or words[-1]
    if len(words) > 1 and words[0] in ARTICLES:
        words = words[1:]
    return " ".join(words)


# What people type for the same letter: typographic apostrophes and quotes, dashes and hyphens, the no-break space
# (after NFKC, which already maps full-width forms, ligatures and the non-breaking hyphen).
_TYPOGRAPHIC = str.maketrans(
    {
        **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032\u02bc\u00b4`", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb", '"'),
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2043\ufe58\ufe63\uff0d", "-"),
        "\u00a0": " ",
    }
)


def fold(text: str) -> str:
    """``text`` as names are compared: Unicode compatibility form (NFKC), typographic apostrophes and quotes made
    straight, every dash a hyphen, case folded. ``Goblin King\u2019s veteran`` and ``goblin king's veteran`` fold
    alike; what the engine lists and shows keeps the world's own spelling."""
    return unicodedata.normalize("NFKC", text.translate(_TYPOGRAPHIC)).translate(_TYPOGRAPHIC).casefold()


@lru_cache(maxsize=1 << 16)
def match_key(text: str) -> str:
    """The one normalisation under which a typed name matches a world's: :func:`fold`, then :func:`normalize`
    (spacing, trailing punctuation, a leading article)."""
    return normalize(fold(text))


def article(name: str, prefix: str | None = None) -> str:
    """``a sword``, ``an apple``, or the node's own LIGHT ``name_prefix``."""
    if prefix:
        return f"{prefix} {name}"
    return f"{'an' if name[:1].lower() in VOWELS else 'a'} {name}"


def the(name: str) -> str:
    return name if name.lower().startswith("the ") else f"the {name}"


def join_list(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if not items:
        return ""
    if len(items) == 1:
        return items[0]
    return f"{', '.join(items[:-1])} and {items[-1]}"


def capitalize(text: str) -> str:
    return text[:1].upper() + text[1:]


# Words that say nothing about which candidate is meant: left out of the exact-match features, the word-overlap rules
# and the partner's listening.
FUNCTION_WORDS = frozenset("a an the to of in on from and i my me you your is it at for with".split())
_WORD = re.compile(r"[a-z]+")


def content_words(text: str) -> set[str]:
    """A text's lower-cased words less :data:`FUNCTION_WORDS` (the word-overlap rules' and the partner's listening)."""
    return set(_WORD.findall(text.lower())) - FUNCTION_WORDS
