"""Memory: the command line's default node budget for decision graphs (``--max-nodes``,
README), and the peak resident memory the benchmarks report (ours, and PyXAI's worker's).

A class formula too large for the machine should stop with a message, not be killed by the
kernel mid-run with nothing said: ``crosscheck`` on a 25-tree breast-cancer forest grew to
24 GB without a budget.
"""

from __future__ import annotations

import os
import sys

#: Bytes per live decision-graph node, unique table and Apply cache included: peak memory
#: over the budget measured 126–138 on a 25-tree breast-cancer forest (up to 95 M nodes) and
#: 185 on 100-tree ann-thyroid (90 M nodes); rounded up.
NODE_BYTES = 200
#: Share of physical memory the default budget may use.
MEMORY_SHARE = 0.6


def default_max_nodes() -> int | None:
    """As many nodes as :data:`MEMORY_SHARE` of this machine's physical memory holds at
    :data:`NODE_BYTES` each; None where the memory size is unknown."""
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    return int(memory * MEMORY_SHARE) // NODE_BYTES if memory > 0 else None


def reset_peak() -> None:
    """Start measuring peak memory afresh (Linux 4.0+: writing 5 to ``/proc/self/clear_refs``
    resets the peak resident set ``VmHWM``); elsewhere the peak is the process's so far."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as out:
            out.write("5")
    except OSError:
        pass


def peak_mb() -> float:
    """Peak resident memory since :func:`reset_peak`, in MB (2^20 bytes)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource  # not on Windows; its unit is KB on Linux, bytes on macOS

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024
