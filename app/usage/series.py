"""The time window of a usage series: bucket sizes a chart can ask for, and the window's bounds."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

from app.lib.errors import ValidationFailed
from app.lib.validation import check_time

Bucket = Literal["minute", "hour", "day"]
STEPS: dict[str, timedelta] = {
    "minute": timedelta(minutes=1),
    "hour": timedelta(hours=1),
    "day": timedelta(days=1),
}
MAX_BUCKETS = 1000  # a chart's worth; a longer window takes a larger bucket


def series_step(since: datetime, until: datetime, bucket: Bucket) -> timedelta:
    """The bucket's length, once the window is checked: aware times, since before until, few buckets."""
    check_time("since", since)
    check_time("until", until)
    if since >= until:
        raise ValidationFailed("since must be earlier than until")
    step = STEPS[bucket]
    if (until - since) / step > MAX_BUCKETS:
        raise ValidationFailed(
            f"the window holds more than {MAX_BUCKETS} {bucket} buckets; take a larger one"
        )
    return step
