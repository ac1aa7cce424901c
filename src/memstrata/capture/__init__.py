"""Capture before answer: what a message holds is found, and secrets removed, before it is kept."""
