"""The pack's logger, for every layer: one stdlib logger, ``zerocopy_continuity``, and every
message carries the pack's prefix so that users find the pack's lines in ComfyUI's console.
Keyword arguments (``exc_info=True``) go to the stdlib call unchanged. A package of its own, so
that importing it loads no engine (the pack must import without one)."""

import logging

PREFIX = "[ZeroCopy-Continuity]"
logger = logging.getLogger("zerocopy_continuity")


def debug(message: str, *args, **kwargs) -> None:
    logger.debug(f"{PREFIX} {message}", *args, **kwargs)


def info(message: str, *args, **kwargs) -> None:
    logger.info(f"{PREFIX} {message}", *args, **kwargs)


def warning(message: str, *args, **kwargs) -> None:
    logger.warning(f"{PREFIX} {message}", *args, **kwargs)


def error(message: str, *args, **kwargs) -> None:
    logger.error(f"{PREFIX} {message}", *args, **kwargs)


def exception(message: str, *args, **kwargs) -> None:
    """An error with the traceback of the exception being handled."""
    logger.exception(f"{PREFIX} {message}", *args, **kwargs)
