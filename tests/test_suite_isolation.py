"""What the test session keeps away from the machine's own folders."""

from __future__ import annotations

import os
from pathlib import Path

from memstrata.capture import rulecache
from memstrata.capture.scan import load_rules


def test_the_rule_cache_of_the_session_is_a_temporary_folder() -> None:
    folder = rulecache.cache_dir()
    assert folder is not None and not folder.is_relative_to(rulecache.default_dir())
    assert not folder.is_relative_to(Path.home())
    assert os.environ.get(rulecache.ENV_CACHE_DIR) == str(folder)  # the CLI in a subprocess too
    load_rules()
    assert list(folder.glob("rules-*.pickle"))
