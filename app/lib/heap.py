"""The garbage collector and a long-running service."""

from __future__ import annotations

import gc

# Container allocations between two young-generation collections (CPython's default is 700). A recall
# allocates a few thousand objects, nearly all freed by reference counting as soon as it ends, so at
# 700 the collector ran about once per recall and walked whatever was alive at that moment: 0.2 ms a
# time (bench, 100k memories: 190 collections and 46 ms over 200 recalls). At 10,000 it ran once.
YOUNG_THRESHOLD = 10_000


def tune_for_serving() -> None:
    """Set up the collector for a process that serves until it exits.

    Collect once, then exempt every object alive at startup from later collections (`gc.freeze`): what
    startup builds (the app, SQLAlchemy's metadata, the embedding model) lives as long as the process,
    yet a full collection walks all of it again: one took 80 ms in the middle of a recall (bench, 100k
    memories, 147k objects tracked), stalling every request in flight. Then collect the young
    generation less often (`YOUNG_THRESHOLD`); the older generations keep their default ratios.
    """
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)
