"""A spoiled match hides nothing: a category's other rules still match where it was.

``scan`` used to walk one ``finditer`` over a category's alternation: a match
that its own rule's ``unless`` (or a quotation) then spoiled took the position,
and the search went on after its end, so another rule of the category that
matched at the same place or inside its span was never seen. The entry is now
the sentence of the first position where some rule matches and nothing spoils
that rule's match there, with or without triggers and heads.
"""

from __future__ import annotations

import tomllib
from importlib import resources

import pytest

from capture_corpus import open_texts
from memstrata.capture import scan as scan_module
from memstrata.capture.scan import RuleSet, load_rules, scan

# Rule "a" comes first in each category, so its alternative takes a position
# before "b" (same place) or "c" (inside its match) is tried there.
PACK = """
language = "xx"
vetoes = ['\\?']
[[rule]]
name = "a"
category = "decision"
pattern = '\\bwe go with\\b'
unless = ['\\bnot sure\\b']
triggers = ["we go"]
[[rule]]
name = "b"
category = "decision"
pattern = '\\bwe go with \\w+'
triggers = ["we go"]
[[rule]]
name = "from-now-on"
category = "preference"
pattern = '\\bfrom now on we use\\b'
unless = ['\\bmaybe\\b']
triggers = ["from now"]
[[rule]]
name = "we-use"
category = "preference"
pattern = '\\bwe use \\w+'
unless = ['\\bnever\\b']
triggers = ["we use"]
[[rule]]
name = "prefer-rest"
category = "correction"
pattern = '\\bprefer\\b[^.]*'
triggers = ["prefer"]
[[rule]]
name = "tabs"
category = "correction"
pattern = '\\btabs\\b'
unless = ['\\bnot tabs\\b']
triggers = ["tabs"]
"""


@pytest.fixture(scope="module", params=[True, False], ids=["heads", "plain"])
def rules(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> RuleSet:
    folder = tmp_path_factory.mktemp("pack")
    (folder / "xx.toml").write_text(PACK, encoding="utf-8")
    return load_rules(folder, use_triggers=request.param)


def found(text: str, rules: RuleSet) -> dict[str, str]:
    entries = scan(text, languages=["xx"], rules=rules, learned=False)
    return {entry.category: entry.text for entry in entries}


def test_a_rule_matching_where_a_spoiled_one_did_still_counts(rules: RuleSet) -> None:
    # "a" matches at 0 and its unless spoils it; "b" matches at 0 as well
    assert found("we go with rust, not sure yet.", rules) == {
        "decision": "we go with rust, not sure yet."
    }
    assert found("we go with rust.", rules) == {"decision": "we go with rust."}


def test_a_rule_matching_inside_a_spoiled_match_still_counts(rules: RuleSet) -> None:
    # "from-now-on" matches at 0 and "maybe" spoils it; "we-use" starts inside its span
    assert found("from now on we use vim, maybe.", rules) == {
        "preference": "from now on we use vim, maybe."
    }


def test_a_match_inside_a_quote_hides_no_unquoted_match(rules: RuleSet) -> None:
    # "prefer-rest" starts inside the quote and runs past it; "tabs" starts after it
    assert found('"I prefer" tabs, always.', rules) == {"correction": '"I prefer" tabs, always.'}
    assert found('"I prefer tabs" always.', rules) == {}  # both start inside the quote


def test_a_vetoed_match_hides_nothing_past_its_sentence(rules: RuleSet) -> None:
    # "prefer-rest" runs from the vetoed question into the next sentence
    assert found("do you prefer? tabs, always.", rules) == {"correction": "tabs, always."}
    assert found("do you prefer? or tabs?", rules) == {}


def test_each_rule_is_still_spoiled_by_its_own_unless(rules: RuleSet) -> None:
    assert found("we go with, not sure.", rules) == {}  # "b" needs a word after "with"
    assert found("from now on we use, maybe.", rules) == {}
    assert found("from now on we use vim, maybe never.", rules) == {}  # both spoiled
    assert found('"I prefer" not tabs, ok.', rules) == {}
    # the next sentence still counts
    assert found("from now on we use, maybe. We use vim.", rules) == {"preference": "We use vim."}


# -- the built-in packs, against a search rule by rule and position by position ------


def _rules_by_language() -> dict[str, list[tuple[str, object, object]]]:
    """Per language: (category, the rule's own pattern, its unless or None)."""
    import re

    out: dict[str, list[tuple[str, object, object]]] = {}
    for path in resources.files("memstrata.capture").joinpath("rules").iterdir():
        if not path.name.endswith(".toml"):
            continue
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        rows = out.setdefault(data["language"], [])
        for rule in data.get("rule", []):
            body = rule["pattern"]
            body = [body] if isinstance(body, str) else body
            body = [scan_module._expand(alt) for alt in body]
            if "case_sensitive" in rule.get("flags", []):
                body = [f"(?-i:{alt})" for alt in body]
            unless = rule.get("unless")
            compiled_unless = None
            if unless:
                unless = [unless] if isinstance(unless, str) else unless
                compiled_unless = re.compile("|".join(map(scan_module._expand, unless)), re.I)
            rows.append((rule["category"], re.compile("|".join(body), re.I), compiled_unless))
    return out


def reference(text: str, rules: RuleSet) -> set[tuple[str, tuple[int, int]]]:
    """Per category, the sentence of the first position where one of its rules
    matches and neither the pack's vetoes, a quote nor that rule's unless
    spoil it (the first language's entry for a category found in two)."""
    codes = scan_module._detect(text)
    message = scan_module._Message(text, text.lower(), False, None)
    first: dict[str, tuple[int, int]] = {}
    for code in codes:
        veto = rules.packs[code].veto
        best: dict[str, int] = {}
        for category, pattern, unless in RULES[code]:
            pos = 0
            while (match := pattern.search(text, pos)) is not None:  # type: ignore[attr-defined]
                at = match.start()
                if at >= best.get(category, len(text) + 1):
                    break
                start, end = message.sentence(at)
                sentence = text[start:end]
                if not (
                    (veto is not None and veto.pattern.search(sentence))
                    or message.quoted(at)
                    or (unless is not None and unless.search(sentence))  # type: ignore[attr-defined]
                ):
                    best[category] = at
                    break
                pos = at + 1
        for category, at in best.items():
            first.setdefault(category, message.sentence(at))
    return {(category, span) for category, span in first.items()}


RULES = _rules_by_language()


def texts() -> list[str]:
    return open_texts()


@pytest.mark.parametrize("use_triggers", [True, False], ids=["heads", "plain"])
def test_the_built_in_packs_find_the_first_unspoiled_match_of_any_rule(use_triggers: bool) -> None:
    rules = load_rules(use_triggers=use_triggers)
    corpus = texts()
    joined = [" ".join(corpus[start : start + 6])[:200] for start in range(0, len(corpus), 2)]
    for text in corpus + joined:
        got = {(e.category, e.span) for e in scan(text, rules=rules, learned=False)}
        assert got == reference(text, rules), text
