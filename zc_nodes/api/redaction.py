"""Engine messages as a client may see them: without the server's folders.

docs/web-api.md promises that no route shows a system path and that the spill
directory is never shown. Engine messages name files with their full paths (for
the log); every message that leaves through the API goes through
``redact_paths``, which keeps each file's own name.
"""

from __future__ import annotations

import re

# A server path in an engine message: quoted ("/a/b/f", 'C:\\a\\f') or bare (/a/b/f: ...).
_QUOTED_PATH = re.compile(r'(["\'])(?:/|[A-Za-z]:[\\/])[^"\']*?([^"\'/\\]*)\1')
_BARE_PATH = re.compile(r'(?<![\w.<])(?:/|[A-Za-z]:\\)(?:[^\s"\':/\\]+[/\\])+([^\s"\':/\\]*)')


def redact_paths(message: str) -> str:
    """An engine message without the server's folders: each path becomes
    ``<spill folder>/<its file name>`` (docs/web-api.md: the spill directory is never shown)."""
    message = _QUOTED_PATH.sub(lambda m: f"{m.group(1)}<spill folder>/{m.group(2)}{m.group(1)}", message)
    return _BARE_PATH.sub(lambda m: f"<spill folder>/{m.group(1)}", message)
