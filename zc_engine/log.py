"""The pack's logger: every message carries the pack's prefix."""

import logging

PREFIX = "[ZeroCopy-Continuity]"
logger = logging.getLogger("zerocopy_continuity")


def info(message: str, *args) -> None:
    logger.info(f"{PREFIX} {message}", *args)


def warning(message: str, *args) -> None:
    logger.warning(f"{PREFIX} {message}", *args)


def error(message: str, *args) -> None:
    logger.error(f"{PREFIX} {message}", *args)
