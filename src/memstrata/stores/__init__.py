"""Canonical stores of memory layers (files first; indexes are derived)."""
