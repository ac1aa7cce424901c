"""The fixtures of the shared suite of ``Memory`` (``places``): ``place``, ``opened``."""

from places import opened, place

__all__ = ["opened", "place"]
