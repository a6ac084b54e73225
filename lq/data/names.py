"""Names from the LIGHT DB as the generators use them: no leading article, one thing, not a crowd."""

from __future__ import annotations

import re

_ARTICLE = re.compile(r"^(a|an|the)\s+", re.IGNORECASE)
_CROWD = re.compile(r"^(some|many|several|people|group)\b|\b(men|women|people|folk|children)$|(?<!s)s$")


def strip_article(name: str) -> str:
    """``"The queen"`` → ``"queen"``; spacing collapsed."""
    name = " ".join(name.split())
    stripped = _ARTICLE.sub("", name)
    return stripped or name


def looks_singular(name: str, max_words: int = 5) -> bool:
    """A name for one character or thing ("knight", "old queen"), not a crowd ("hikers", "old men")."""
    n = strip_article(name).lower()
    return bool(n) and len(n.split()) <= max_words and not _CROWD.search(n)
