"""The arena's own limit of open files.

A live bot process costs the arena about ten descriptors (its stderr pipe and log, its
socket and socket folder, its channel, its cgroup's files kept open), so a field of a
hundred bots, or a pool of spares and idle processes, passes 1,024: the soft limit many
systems give a login shell. The arena raises its own soft limit to the hard one at start
(:func:`raise_descriptor_limit`); nothing in it depends on descriptor numbers (its one
log pump uses ``epoll``, :mod:`arena.proc.logs`). Each sandboxed bot gets a limit of its
own (``open_files`` in ``[limits]``, 256 by default), whatever the arena's.
"""

from __future__ import annotations

import resource

CEILING = 1 << 20
"""The highest soft limit asked for, where the hard limit is unlimited."""


def raise_descriptor_limit() -> int:
    """Raise this process's soft limit of open files to its hard limit (at most
    :data:`CEILING`); the soft limit in force after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = CEILING if hard == resource.RLIM_INFINITY else min(hard, CEILING)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            return soft
        return target
    return soft
