"""The on-disk cache of compiled capture rules (``capture.rulecache``): the
same scans as compiling, damage and concurrent writers survived, no cost
paid at import."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memstrata.capture import rulecache
from memstrata.capture.scan import RuleSet, load_rules, scan

SRC = str(Path(__file__).resolve().parents[1] / "src")

TEXTS = [
    "My name is Alice and I prefer tea.",
    "Actually, the port is 8080, not 80. Remember that the deploy is on Fridays.",
    "We decided to use PostgreSQL for the events table.",
    "Меня зовут Борис, я предпочитаю чай.",
    "我叫小明，我喜欢喝茶。",
    "Is the port 8080?",
    "Mening ismim Aziz.",
]


def _scans(rules: RuleSet) -> list[list[object]]:
    return [list(scan(text, rules=rules)) for text in TEXTS]


def _patterns(obj: object, seen: set[int] | None = None) -> list[re.Pattern[str]]:
    """Every compiled pattern reachable from ``obj``."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    if isinstance(obj, re.Pattern):
        return [obj]
    if isinstance(obj, dict):
        children: list[object] = [*obj.keys(), *obj.values()]
    elif isinstance(obj, (list, tuple, set, frozenset)):
        children = list(obj)
    elif hasattr(obj, "__slots__"):
        children = [getattr(obj, name) for name in obj.__slots__ if hasattr(obj, name)]
    else:
        return []
    return [found for child in children for found in _patterns(child, seen)]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setattr(rulecache, "_folder", folder)
    return folder


def test_a_cached_rule_set_scans_as_a_compiled_one(cache: Path) -> None:
    stored = load_rules()
    files = list(cache.glob("rules-*.pickle"))
    assert len(files) == 1
    loaded = load_rules()
    assert loaded is not stored and _scans(loaded) == _scans(stored)
    rulecache.use_dir(None)  # off: compiled afresh
    assert _scans(load_rules()) == _scans(loaded)


def test_every_cached_pattern_equals_the_one_re_compiles(cache: Path) -> None:
    load_rules()
    loaded = _patterns(load_rules())
    assert len(loaded) > 50
    for pattern in loaded:
        assert pattern == re.compile(pattern.pattern, pattern.flags)


def test_the_key_follows_the_packs(cache: Path) -> None:
    extra = (
        "mine.toml",
        'language = "en"\n[[rule]]\ncategory = "remember"\npattern = "\\\\bzorp\\\\b"\n',
    )
    assert scan("zorp it", rules=load_rules(extra_packs=[extra]))
    assert not scan("zorp it", rules=load_rules())
    changed = (extra[0], extra[1].replace("zorp", "blip"))
    assert not scan("zorp it", rules=load_rules(extra_packs=[changed]))
    assert len(list(cache.glob("rules-*.pickle"))) == 3


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "garbage"])
def test_a_damaged_cache_file_is_rebuilt(cache: Path, damage: str) -> None:
    expected = _scans(load_rules())
    (path,) = cache.glob("rules-*.pickle")
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        middle = len(data) // 2
        path.write_bytes(data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :])
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        path.write_bytes(b"\x80\x04not a pickle at all" * 10)
    assert _scans(load_rules()) == expected
    assert path.read_bytes() != b"" and _scans(load_rules()) == expected
    assert not list(cache.glob(".rules-*"))  # no temporary file left behind


def test_an_unwritable_cache_folder_is_no_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setattr(rulecache, "_folder", blocker / "cache")
    assert _scans(load_rules()) == _scans(load_rules(use_triggers=True))


def test_a_bad_pack_is_refused_and_not_cached(cache: Path) -> None:
    from memstrata.errors import InvalidInput

    with pytest.raises(InvalidInput, match="bad regex"):
        load_rules(
            extra_packs=[
                ("bad.toml", 'language = "en"\n[[rule]]\ncategory = "remember"\npattern = "("\n')
            ]
        )
    assert not list(cache.glob("*"))


@pytest.mark.slow  # several interpreters at once
def test_concurrent_writers_leave_one_good_file(cache: Path) -> None:
    code = (
        "import os, pathlib\n"
        "from memstrata.capture import rulecache\n"
        "rulecache.use_dir(pathlib.Path(os.environ['MEMSTRATA_CACHE_DIR']))\n"
        "from memstrata.capture.scan import default_rules, scan\n"
        "default_rules()\n"
        "print(len(scan('My name is Alice and I prefer tea.')))\n"
    )
    env = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin", rulecache.ENV_CACHE_DIR: str(cache)}
    children = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, env=env, text=True)
        for _ in range(4)
    ]
    outputs = [child.communicate(timeout=300)[0].strip() for child in children]
    assert outputs == ["2"] * 4 and all(child.returncode == 0 for child in children)
    assert len(list(cache.glob("rules-*.pickle"))) == 1
    assert not list(cache.glob(".rules-*"))
    assert _scans(load_rules()) == _scans(load_rules())


@pytest.mark.slow  # a fresh interpreter
def test_importing_the_scanner_compiles_nothing(cache: Path) -> None:
    code = (
        "import memstrata.capture.scan as s, memstrata.memory\n"
        "assert s._DEFAULT is None\n"
        "import os; assert not os.path.exists(os.environ['MEMSTRATA_CACHE_DIR'])\n"
    )
    env = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin", rulecache.ENV_CACHE_DIR: str(cache)}
    subprocess.run([sys.executable, "-c", code], env=env, check=True)


def test_the_folder_the_environment_names() -> None:
    home = rulecache.default_dir()
    assert rulecache.dir_from({}) == home
    assert rulecache.dir_from({"XDG_CACHE_HOME": "/x"}) == Path("/x/memstrata")
    assert rulecache.dir_from({"MEMSTRATA_CACHE_DIR": "/y", "XDG_CACHE_HOME": "/x"}) == Path("/y")
    assert rulecache.dir_from({"MEMSTRATA_CACHE_DIR": ""}) is None


def test_the_command_line_uses_the_folder_of_its_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from memstrata.capture import scan as scanner
    from memstrata.cli import cli

    monkeypatch.setattr(rulecache, "_folder", rulecache._UNSET)
    monkeypatch.setattr(scanner, "_DEFAULT", None)  # not loaded yet in this process
    folder = tmp_path / "from-env"
    env = {"MEMSTRATA_CACHE_DIR": str(folder), "MEMSTRATA_HOME": str(tmp_path / "ws")}
    result = CliRunner().invoke(cli, ["scan", "My name is Alice."], env=env)
    assert result.exit_code == 0 and "proper_noun" in result.output
    assert list(folder.glob("rules-*.pickle"))


def test_old_rule_files_are_pruned_to_the_newest(cache: Path) -> None:
    """Each version leaves a file of its own: a write keeps the ``KEEP`` newest
    (its own among them) and removes a killed writer's stale temporary file."""
    cache.mkdir(parents=True)
    old = []
    for number in range(rulecache.KEEP + 3):
        path = cache / f"rules-{number:032x}.pickle"
        path.write_bytes(b"an older version's rules")
        stamp = 1_000_000 + number * 60
        os.utime(path, (stamp, stamp))
        old.append(path)
    stale = cache / ".rules-killed.tmp"
    fresh = cache / ".rules-writing.tmp"
    stale.write_bytes(b"half")
    os.utime(stale, (1_000_000, 1_000_000))
    fresh.write_bytes(b"half")
    other = cache / "model-1234.json"
    other.write_text("{}")
    assert _scans(load_rules())  # compiled and written: the prune runs
    left = sorted(cache.glob("rules-*.pickle"))
    assert len(left) == rulecache.KEEP
    assert set(old[-(rulecache.KEEP - 1) :]) < set(left)  # the newest kept, with the new file
    assert not stale.exists() and fresh.exists() and other.exists()
    assert _scans(load_rules()) == _scans(load_rules())  # the new file is read back
