"""Engram against mem0 (its open-source `Memory` on pgvector) on the same data, model and machine."""
