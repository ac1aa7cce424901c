"""Storage: files written atomically and durably, the workspace lock, the
journal, the workspace layout (paths and layer names) and the path guard."""
