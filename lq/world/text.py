"""Names and phrases: how the engine matches what a player types and renders what it says."""

from __future__ import annotations

import re

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
