"""glibc's heap tuned for inference: large buffers mapped on their own, free pages handed back (elsewhere: nothing).

Each window's inference allocates and frees hundreds of MB in buffers of every size; by default glibc keeps the freed
pages resident, scattered through its arenas. What this saves: docs/engine.md.
"""

from __future__ import annotations

import ctypes
import ctypes.util


def _glibc():
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        return libc if libc is not None and hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None
    except OSError:  # not glibc (musl, macOS): nothing to tune
        return None


_GLIBC = _glibc()
_M_MMAP_THRESHOLD = -3  # glibc's malloc.h
# Above a decode step's buffers (rows x vocabulary in float32: 1.7 MB for 8 windows greedy, 8.3 MB with 5 beams each),
# reused from the heap step after step; below a window's (its cross-attention keys and values 37 MB, the aligner's
# logits 31 MB), mapped and handed back whole (docs/engine.md, Memory)
MMAP_THRESHOLD = 16 << 20


def release_free_memory() -> None:
    """Hand the C heap's free pages back to the system (glibc's malloc_trim), well under a millisecond a call."""
    if _GLIBC is not None:
        _GLIBC.malloc_trim(0)


def map_large_buffers() -> None:
    """Have glibc map every buffer of MMAP_THRESHOLD or more on its own, and unmap it when it is freed.

    By default glibc raises that threshold up to 32 MiB and serves smaller buffers from its arenas, where they leave
    holes no trim hands back. Process-wide and idempotent; called when a model loads."""
    if _GLIBC is not None:
        _GLIBC.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
