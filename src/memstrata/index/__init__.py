"""The derived search index of a workspace (``.memstrata/index.sqlite``).

Files are the truth; this index is rebuilt from them at any time (``reindex``).
``text`` normalises text for FTS5 (Uzbek apostrophe letters, CJK), ``chunks``
cuts files into citable chunks, ``sqlite`` stores them (FTS5 + vectors) and
``search`` fuses BM25 and vector candidates.
"""
