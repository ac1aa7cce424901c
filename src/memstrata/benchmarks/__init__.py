"""Retrieval benchmarks run against public conversational-memory data sets."""
