"""What the bench scripts share: percentiles and the machine line of a report."""

from __future__ import annotations

import json
import platform
import statistics
from pathlib import Path
from typing import Any


def percentiles(values: list[float]) -> dict[str, float]:
    """p50, p99 and mean of ``values``, rounded to 3 places."""
    ordered = sorted(values)
    return {
        "p50": round(statistics.median(ordered), 3),
        "p99": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 3),
        "mean": round(statistics.fmean(ordered), 3),
    }


def machine() -> str:
    return f"{platform.machine()}, {platform.system()}, Python {platform.python_version()}"


def emit(report: dict[str, Any], out: Path | None) -> None:
    """Print the report as JSON, and write it to ``out`` when given."""
    text = json.dumps(report, indent=2)
    print(text)
    if out is not None:
        out.write_text(text + "\n", encoding="utf-8")
