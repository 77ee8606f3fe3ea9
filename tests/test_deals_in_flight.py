"""The rule between games in flight (arena/play/pool.py: DealsInFlight): no two games of
one deal with a bot in common at once; the runners wait rather than break it."""

from __future__ import annotations

import trio

from arena.play.pool import DealsInFlight

EXTERNAL = {"a", "b", "c"}


def flight() -> DealsInFlight:
    return DealsInFlight(lambda name: name in EXTERNAL)


def test_a_game_of_a_deal_in_flight_with_a_bot_in_common_clashes() -> None:
    f = flight()
    token = f.enter(7, ("a", "b", "heuristic"))
    assert f.clashes(7, ("b", "heuristic", "a"))  # another rotation of the set
    assert f.clashes(7, ("c", "a", "random"))  # the same deal at another table
    assert not f.clashes(8, ("a", "b", "heuristic"))  # another deal
    assert not f.clashes(7, ("c", "heuristic", "random"))  # no bot in common
    f.leave(token)
    assert not f.clashes(7, ("b", "heuristic", "a"))


def test_built_in_bots_in_common_do_not_clash() -> None:
    f = flight()
    f.enter(7, ("a", "heuristic", "random"))
    assert not f.clashes(7, ("b", "heuristic", "random"))


def test_nothing_watched_nothing_clashes() -> None:
    f = DealsInFlight(lambda name: False)  # shared isolation: trusted bots
    f.enter(7, ("a", "b"))
    assert not f.clashes(7, ("a", "b"))


def test_a_game_that_leaves_wakes_the_waiter() -> None:
    order: list[str] = []

    async def main() -> None:
        f = flight()
        token = f.enter(7, ("a", "b"))

        async def waiter() -> None:
            while f.clashes(7, ("b", "a")):
                await f.changed()
            order.append("second starts")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiter)
            await trio.sleep(0.01)
            order.append("first ends")
            f.leave(token)

    trio.run(main)
    assert order == ["first ends", "second starts"]


def test_take_gives_the_first_game_that_meets_none_in_flight() -> None:
    from collections import deque
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Game:
        deal_seed: int
        bots: tuple[str, ...]

    f = flight()
    f.enter(7, ("a", "b"))
    queue = deque([Game(7, ("b", "a")), Game(7, ("c", "heuristic")), Game(8, ("a", "b"))])
    assert f.take(queue) == Game(7, ("c", "heuristic"))  # the rotation in doubt waits
    assert list(queue) == [Game(7, ("b", "a")), Game(8, ("a", "b"))]
    f.enter(8, ("a", "b"))
    assert f.take(queue) is None and len(queue) == 2  # each would meet a game in flight
