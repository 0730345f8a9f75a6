"""Progress lines from long asset steps, for whoever listens (the CLI prints them to stderr).

Dagster's console log is turned down to warnings for CLI runs, so assets also report progress to
the standard ``logging`` logger ``gpusre.progress``, throttled to one line every few seconds.
"""

import logging
import time
from collections.abc import Callable

import dagster as dg

PROGRESS_LOGGER = logging.getLogger("gpusre.progress")


def progress_reporter(context: dg.AssetExecutionContext, every_s: float = 3.0) -> Callable[[str], None]:
    """A callback that logs every message to Dagster and at most one per ``every_s`` to ``gpusre.progress``."""
    last = [0.0]

    def report(message: str) -> None:
        context.log.info(message)
        now = time.monotonic()
        if now - last[0] >= every_s:
            last[0] = now
            PROGRESS_LOGGER.info(message)

    return report
