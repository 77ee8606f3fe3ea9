"""The values every layer shares, with no I/O beyond the standard library's: records and
their re-check, the results chain, jobs and outcomes (what crosses to a Ray node),
specs, limits, faults, names, one-line errors, and marked folders and safe files.

Imports: :mod:`arena.rules` and the standard library only (enforced by import-linter).
"""
