"""What "it", "that" and "there" in a transcript turn point at, as words
indexed beside it (issue 16): a turn that says "I loved it!" right after
"We went to the pottery workshop" is also found by "pottery workshop".

A transcript message that holds a referring word (``_REFERS``) gains the
content words of the message before it in the same file (``salient``: not a
function or chat word, four letters or more, longest first, at most
``LIMIT``). Only what BM25 reads gains them (``Lexical``); the message's
text, snippet and vector are unchanged. English only.
"""

from __future__ import annotations

import re

__all__ = ["LIMIT", "STOPWORDS", "refers", "salient"]

# The previous message's three longest content words: chosen by nested
# leave-one-conversation-out on LoCoMo among 3 / 6 / 10 / all (every fold
# chose 3; the first guess was 6). docs/search-history.md, "Issue 16, second round".
LIMIT = 3
_STOP_TEXT = """
a an the and or but if of to in on at by for with from as into about over after before is are
was were be been being am do does did have has had will would can could may might must i me my
we us our you your he him his she her it its they them their this that these those what which
who whom whose when where why how not no so too very just also really oh wow yeah yes hey hi
thanks thank great good cool awesome nice love glad sounds sure totally definitely amazing lot
much something anything everything things thing like get got going go gonna know think feel
make made see saw one all some any more most other been there here then than now well way time
"""
STOPWORDS = frozenset(_STOP_TEXT.split())
_WORDS = re.compile(r"[A-Za-z][A-Za-z'-]+")
_REFERS = re.compile(r"\b(?:it|that|this|there|those|these|them|they)\b", re.I)


def refers(text: str) -> bool:
    """Whether ``text`` holds a word that points at something said before."""
    return _REFERS.search(text) is not None


def salient(text: str, limit: int = LIMIT) -> list[str]:
    """The content words of ``text``, longest first, at most ``limit``."""
    words = [w for w in _WORDS.findall(text) if len(w) > 3 and w.lower() not in STOPWORDS]
    return sorted(dict.fromkeys(words), key=len, reverse=True)[:limit]
