"""When this process may fork: the case loader's worker processes (`harness.corpus.loader.read_in_workers`).

Forking is safe only while this process runs no other thread (a lock another thread held would stay held in the
child), and only on Linux (elsewhere the default start method is not fork).
"""

from __future__ import annotations

import os
import sys
import threading


def may_fork() -> bool:
    """Whether a child forked now is safe: Linux, more than one core, and no other thread in this process."""
    return sys.platform == "linux" and (os.cpu_count() or 1) > 1 and threading.active_count() == 1
