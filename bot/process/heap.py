"""The heap after start-up, kept out of the garbage collector's way.

Start-up leaves a couple of hundred thousand long-lived objects (modules, classes, pydantic
and SDK schemas, config). Python's full collections scan every one of them each time: at 50
turns at once, one every few seconds, about 100 ms of CPU each. Frozen (``gc.freeze``)
after one collection of start-up's garbage, they are never scanned again; what turns
allocate is collected as before.

The youngest generation is collected after 10,000 allocations rather than 700: most of a
turn's objects are freed by their reference counts before a collection would have looked at
them, so a 50-turn burst sees a few young collections instead of about a hundred.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 10_000  # Python's default: 700
OLDER_THRESHOLDS = (10, 10)  # Python's defaults


def freeze_start_up() -> int:
    """Collect start-up's garbage, move every object left to the permanent generation and
    set the young generation's threshold; returns how many objects were frozen."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, *OLDER_THRESHOLDS)
    return gc.get_freeze_count()
