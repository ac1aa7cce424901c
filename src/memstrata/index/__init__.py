"""The derived search index of a workspace (``.memstrata/index.sqlite``).

Files are the truth; this index is rebuilt from them at any time (``reindex``).
``text`` normalises text as FTS5's tokenizer would (Uzbek apostrophe letters,
CJK), ``chunks`` cuts files into citable chunks, ``sqlite`` stores them (and
vectors), ``lexical`` is the one BM25 (in RAM) and ``hybrid`` fuses BM25 and
vector candidates.
"""
