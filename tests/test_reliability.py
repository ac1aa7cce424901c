"""Short versions of the reliability campaign (issue #13): every class of attack,
a few rounds each. ``bench/reliability.py`` runs the same attacks (from
``tests/attacks/``) at full length and prints the table.
Every class must hold: nothing lost, nothing leaked, no raw exception.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from attacks import damage, editor, kills, leaks, mixes, paths, storage
from attacks.common import Attack

SEED = random.randrange(2**32)  # each attack reports its seed in failures


def assert_held(attack: Attack) -> None:
    """Nothing lost, leaked, raised raw or otherwise broken."""
    assert not attack.failed, (attack.name, attack.seed, attack.failures[:5])
    assert attack.tries > 0


def problems_of(attack: Attack, label: str) -> list[str]:
    """The problems of the try named ``label`` ([] when it passed)."""
    for failure in attack.failures:
        if failure["try"] == label:
            problems = failure["problems"]
            assert isinstance(problems, list)
            return [str(p) for p in problems]
    return []


# -- 1. SIGKILL during every kind of write ---------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("kind", kills.KINDS)
def test_sigkill_during_every_kind_of_write_loses_nothing(tmp_path: Path, kind: str) -> None:
    attack = kills.run_kind(tmp_path / "ws", kind, 3, SEED, minilm=False)
    assert_held(attack)


# -- 2. processes and threads at once ---------------------------------------------------


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Attack]:
    base = tmp_path_factory.mktemp("mix")
    return {name: mixes.run_mix(base, name, 1, SEED, ops=12, minilm=False) for name in mixes.ROUNDS}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(mixes.ROUNDS))
def test_processes_and_threads_at_once_lose_and_duplicate_nothing(
    mixed: dict[str, Attack], name: str
) -> None:
    attack = mixed[name]
    assert attack.lost == 0, attack.failures
    allowed = ("acknowledged", "search_errors", "raw_errors")  # search errors: the next test
    broken = {k: v for k, v in attack.counts.items() if v and k not in allowed}
    assert not broken, attack.failures
    assert attack.counts["raw_errors"] <= attack.counts["search_errors"], attack.failures


@pytest.mark.slow
@pytest.mark.parametrize("name", list(mixes.ROUNDS))
def test_searches_at_once_raise_nothing(mixed: dict[str, Attack], name: str) -> None:
    assert_held(mixed[name])


# -- 3. in-place editor saves during checkpoints -----------------------------------------


@pytest.mark.slow
def test_in_place_editor_saves_lose_no_fact_and_no_hand_line(tmp_path: Path) -> None:
    attack = editor.run_saves(tmp_path, 10, SEED)
    assert_held(attack)
    assert attack.tries == 10


# -- 4. damaged files -----------------------------------------------------------------------

_SPAWNS = ("journal/", "memstrata.toml/")


def _damage_params() -> list[object]:
    params = []
    for name in damage.DAMAGES:
        marks = [pytest.mark.slow] if name.startswith(_SPAWNS) else []
        params.append(pytest.param(name, marks=marks, id=name))
    return params


@pytest.mark.parametrize("name", _damage_params())
def test_a_damaged_file_loses_nothing_and_raises_nothing_raw(tmp_path: Path, name: str) -> None:
    attack = damage.run_damage(tmp_path, name, 1, SEED)
    assert_held(attack)


# -- 5. a full disk -------------------------------------------------------------------------


@pytest.mark.slow
def test_a_full_disk_loses_nothing_acknowledged(tmp_path: Path) -> None:
    [attack] = storage.run_disk_full(tmp_path, 0.5, SEED, lambda _: None)
    if attack.skipped:
        pytest.skip(attack.skipped)
    assert_held(attack)


# -- 6. a read-only workspace ---------------------------------------------------------------


@pytest.fixture(scope="module")
def read_only(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Attack]:
    attacks = storage.run_read_only(tmp_path_factory.mktemp("ro"), 1.0, SEED, lambda _: None)
    return {attack.name.split("/")[1]: attack for attack in attacks}


_RO_VARIANTS = ["read_only=True", "bind mount"]


def _failed_tries(attack: Attack) -> set[str]:
    return {str(failure["try"]) for failure in attack.failures}


@pytest.mark.slow
@pytest.mark.parametrize("variant", _RO_VARIANTS)
def test_a_read_only_workspace_reads_refuses_writes_and_changes_nothing(
    read_only: dict[str, Attack], variant: str
) -> None:
    attack = read_only[variant]
    if attack.skipped:
        pytest.skip(attack.skipped)
    assert attack.tries > 40
    assert not _failed_tries(attack), attack.failures


@pytest.mark.slow
@pytest.mark.parametrize("variant", _RO_VARIANTS)
def test_a_read_only_workspace_serves_every_read(
    read_only: dict[str, Attack], variant: str
) -> None:
    attack = read_only[variant]
    if attack.skipped:
        pytest.skip(attack.skipped)
    assert_held(attack)


# -- 7. hostile paths -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Attack:
    [attack] = paths.run(tmp_path_factory.mktemp("paths"), 1.0, SEED, lambda _: None)
    return attack


@pytest.mark.slow  # 800 attacks, the CLI in subprocesses
def test_hostile_paths_leak_nothing_and_are_refused(hostile: Attack) -> None:
    assert hostile.leaked == 0, hostile.failures
    assert hostile.tries > 800
    accepted = [f for f in hostile.failures if any("accepted" in p for p in f["problems"])]
    assert accepted == []


@pytest.mark.slow  # 800 attacks, the CLI in subprocesses
def test_hostile_paths_raise_nothing_raw(hostile: Attack) -> None:
    raw = [f for f in hostile.failures if any("raw exception" in p for p in f["problems"])]
    assert raw == []


@pytest.mark.slow  # 800 attacks, the CLI in subprocesses
def test_hostile_names_with_lone_surrogates_raise_nothing_raw(hostile: Attack) -> None:
    assert hostile.errors == 0, hostile.failures


# -- 8. secrets through every channel -------------------------------------------------------


@pytest.fixture(scope="module")
def secrets(tmp_path_factory: pytest.TempPathFactory) -> Attack:
    [attack] = leaks.run(tmp_path_factory.mktemp("secrets"), 1.0, SEED, lambda _: None)
    return attack


def _channel_params() -> list[str]:
    return [*leaks.CHANNELS, "hand edit of MEMORY.md"]


def test_the_secret_scan_sees_what_is_written(secrets: Attack) -> None:
    assert problems_of(secrets, "the scan finds what is no secret") == []


@pytest.mark.parametrize("channel", _channel_params())
def test_no_secret_reaches_disk_through_any_channel(secrets: Attack, channel: str) -> None:
    broken = {
        kind: problems_of(secrets, f"{kind} via {channel}")
        for kind in leaks.SECRETS
        if problems_of(secrets, f"{kind} via {channel}")
    }
    assert broken == {}
