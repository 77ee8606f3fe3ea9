"""Generated code of the arena.v1 protocol (proto/arena/v1). Do not edit.

Regenerate with ``python -m arena._genproto``; conversions to and from the domain
values are in :mod:`arena.wire.serde`.
"""
