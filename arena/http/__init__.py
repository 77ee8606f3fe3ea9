"""HTTP for the arena's small web servers: :mod:`arena.http.server` is a bounded HTTP/1.1
server on a thread of its own (one asyncio loop: no thread per connection, a cap on
connections and on event streams, a deadline for every request), with server-sent events
fed by one broadcaster that renders each change once. The league's live page
(:mod:`arena.league_service.web`), the browser seat (:mod:`arena.human.web`) and ``arena serve``
(:mod:`arena.publish.serve`) stand on it.

A layer low in the stack (beside :mod:`arena.wire`): it knows nothing of games, only of
requests, answers and feeds.
"""
