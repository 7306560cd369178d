"""The one refusal every GPU tool makes: without CUDA it says so in one line and measures nothing.

    from bench.gpu.cuda_required import require_cuda
    torch = require_cuda("device_tier")      # exits 2 with one line when there is no CUDA device
"""

from __future__ import annotations

import sys

REFUSED = 2  # the exit status of a refusal: nothing was measured


def refuse(tool: str, message: str) -> None:
    print(f"{tool}: {message}", file=sys.stderr)
    raise SystemExit(REFUSED)


def require_cuda(tool: str):
    """torch, when a CUDA device is usable; otherwise one line on stderr and exit 2."""
    try:
        import torch
    except ImportError:
        refuse(tool, "PyTorch is not installed in this Python; run it with ComfyUI's Python. Nothing was measured.")
    if not torch.cuda.is_available():
        refuse(tool, f"needs a CUDA GPU: torch.cuda.is_available() is False (torch {torch.__version__}). "
                     "Nothing was measured.")
    return torch
