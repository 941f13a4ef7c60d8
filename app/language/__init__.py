"""Rule-based reading of natural-language statements: no model, no network, no database.

Shared by the offline agent and extractor (`app.agent`) and the write path's slot inference
(`app.memory.inferred`), so neither layer imports the other.
"""
