"""The reliability campaign (issue #13): every class of attack on a real workspace.

Each class is a function ``run(base, scale, seed, say) -> list[Attack]`` that
works in folders under ``base``, runs about ``scale`` times its default number
of tries, draws every random choice from ``seed`` (each try's own seed is in
its failure report) and reports progress through ``say``. ``bench/reliability.py``
runs them all and prints the table; ``tests/test_reliability.py`` runs short
versions. Both import from here (tests import nothing from bench/).
"""

from __future__ import annotations

import importlib
from pathlib import Path

from .common import Attack, Progress, quiet

__all__ = ["CLASSES", "Attack", "Progress", "quiet", "run_class"]

# class -> (module, function)
CLASSES: dict[str, tuple[str, str]] = {
    "kill": ("kills", "run"),
    "mix": ("mixes", "run"),
    "editor": ("editor", "run"),
    "damage": ("damage", "run"),
    "diskfull": ("storage", "run_disk_full"),
    "readonly": ("storage", "run_read_only"),
    "paths": ("paths", "run"),
    "secrets": ("leaks", "run"),
}


def run_class(
    name: str, base: Path, scale: float, seed: int, say: Progress = quiet
) -> list[Attack]:
    """Run attack class ``name`` in a folder of its own under ``base``."""
    folder = base / name
    folder.mkdir(parents=True, exist_ok=True)
    module, function = CLASSES[name]
    runner = getattr(importlib.import_module(f"{__name__}.{module}"), function)
    result: list[Attack] = runner(folder, scale, seed, say)
    return result
