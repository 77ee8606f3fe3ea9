"""Bot processes: the only package that starts, confines, stops and ends processes.

:mod:`.bwrap` builds a bot's sandbox (bubblewrap), :mod:`.cgroup` its limits, CPU
accounting and the stop between calls, :mod:`.process` one process's life,
:mod:`.connection` one bot over gRPC (hand-shake, restart, freeze and pin around its
processes), :mod:`.logs` its log files, :mod:`.reaper` the clean-up after an arena that
died.
"""
