"""Text as FTS5 sees it, the same for what is indexed and what is asked.

SQLite's ``unicode61`` tokenizer (wrapped by ``porter``) breaks three things
this project needs, fixed here before the text reaches it:

* **Uzbek apostrophe letters.** ``o'zbek``, ``g'oya``, ``ma'lumot``: the
  apostrophe (any of ``' ‘ ’ ` ʼ``) is a separator to unicode61, which makes
  ``o`` and ``zbek``. Between two letters it becomes U+02BB (ʻ, a modifier
  letter: a token character), so the word stays whole — except before an
  English clitic (``Caroline's``, ``don't``, ``we're``, ``I'm``, ``they'll``),
  which stays a separator so the name or word is found on its own. Known
  miss: a possessive of a word ending in o or g (``Diego's``) is read as
  Uzbek and stays whole.
* **CJK.** unicode61 makes one token of a whole run of Han/kana characters
  (``我喜欢喝茶``), so no query word ever matches inside it. A run is written
  as its characters and its overlapping bigrams (``我 喜 欢 喝 茶 我喜 喜欢 欢喝
  喝茶``); a query run as its bigrams (or the character alone).
* **Cyrillic** is lower-cased and kept whole by unicode61 (no stemming: the
  porter stemmer only changes ASCII words), so nothing is done to it.

``query_terms`` drops a short list of function words (question words,
pronouns, auxiliaries in the four languages) that only add noise to an OR
query; BM25's idf would down-weight them anyway, but they cost time.
"""

from __future__ import annotations

import re

__all__ = ["STOPWORDS", "index_text", "query_terms", "without_names"]

_APOSTROPHE = re.compile(r"(?<=[^\W\d_])['‘’`ʼ](?=[^\W\d_])")
_CLITIC = re.compile(r"(?:s|t|re|ve|ll|d|m)(?![^\W_])", re.IGNORECASE)
_CJK_RANGES = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_RUN = re.compile(f"[{_CJK_RANGES}]+")
_WORD = re.compile(r"[^\W_]+(?:ʻ[^\W_]+)*")
_STOPWORDS = """
a an the and or but if of to in on at by for with from as into about over after
before is are was were be been being am do does did doing have has had having
will would shall should can could may might must i me my mine we us our you your
he him his she her it its they them their this that these those what which who
whom whose when where why how there here than then so not no yes just also very
too any some all each s t m re ve ll d что как где когда почему зачем кто это тот та те и а но
или в на с по к у о из за от до не ли же бы мне меня мой моя моё мы вы ты он она
они его её их был была было были есть nima qanday qayerda qachon nega kim bu shu
va ham lekin yoki men sen u biz siz ular
"""
_STOP = frozenset(_STOPWORDS.split())
STOPWORDS = _STOP  # what ``query_terms`` drops


def _apostrophe(match: re.Match[str]) -> str:
    """An apostrophe between letters: ʻ (a letter: the word stays whole), but
    an English clitic (Caroline's, don't, we're, I'm, they'll, she'd) keeps its
    apostrophe, a separator, so "Caroline's" is found by "Caroline"."""
    text, at = match.string, match.start()
    before = text[at - 1]
    if before in "oOgG":  # Uzbek oʻ and gʻ: o't, g'oya
        return "ʻ"
    clitic = _CLITIC.match(text, at + 1)
    if clitic is None:
        return "ʻ"
    ending = clitic.group().lower()
    if ending == "t" and before not in "nN":  # only n't
        return "ʻ"
    if ending == "m" and not (before in "iI" and (at < 2 or not text[at - 2].isalpha())):
        return "ʻ"  # only I'm (Uzbek ta'm stays whole)
    return match.group()


def _cjk_grams(run: str) -> str:
    if len(run) == 1:
        return run
    pairs = [run[i : i + 2] for i in range(len(run) - 1)]
    return " ".join([*run, *pairs])


def index_text(text: str) -> str:
    """``text`` as it is handed to FTS5 for indexing."""
    joined = _APOSTROPHE.sub(_apostrophe, text)
    return _CJK_RUN.sub(lambda run: f" {_cjk_grams(run.group())} ", joined)


def query_terms(text: str) -> list[str]:
    """The distinct search terms of a query, in order (function words dropped,
    unless nothing else is left)."""
    joined = _APOSTROPHE.sub(_apostrophe, text).lower()
    terms: list[str] = []
    for piece in _CJK_RUN.split(joined):
        terms += _WORD.findall(piece)
    for run in _CJK_RUN.findall(joined):
        terms += [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
    kept = [term for term in dict.fromkeys(terms) if term not in _STOP]
    return kept or list(dict.fromkeys(terms))


def without_names(query: str, terms: list[str], names: frozenset[str]) -> str:
    """``query`` without the words of ``terms`` (``query_terms``) that are in
    ``names`` (lower-cased), nor their ``'s``: what the embedder reads of a
    query (issue 16). Every transcript turn is embedded as ``Speaker: text``,
    so a speaker's name in the question pulls towards all of that speaker's
    turns alike and away from what was said; the speaker factor and BM25 still
    read the name. A query that is nothing but names stays as it is."""
    named = [term for term in terms if term in names]
    if not named:
        return query
    pattern = r"\b(?:" + "|".join(map(re.escape, named)) + r")(?:['‘’`ʼ]s)?\b"
    left = " ".join(re.sub(pattern, " ", query, flags=re.IGNORECASE).split())
    return left if _WORD.search(left) else query
