"""The edge to the bots: the only package that imports protobuf and gRPC (with
:mod:`arena.sdk`, the bots' side).

:mod:`.serde` converts domain values to and from protobuf, :mod:`.client` makes the
referee's calls to one bot, :mod:`.channels` opens channels (TLS, tokens) and waits for
a bot to serve, :mod:`.trio_grpc` awaits gRPC calls from trio.
"""
