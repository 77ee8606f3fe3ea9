"""The rule between games in flight (arena/play/pool.py: DealsInFlight): no two games of
one deal with a bot in common at once; the runners wait rather than break it."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import trio
import trio.testing

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

        with trio.fail_after(10):  # (a leave that wakes nobody fails, not hangs)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(waiter)
                await trio.testing.wait_all_tasks_blocked()  # it waits on changed()
                order.append("first ends")
                f.leave(token)

    trio.run(main)
    assert order == ["first ends", "second starts"]


@dataclass(frozen=True)
class Game:
    deal_seed: int
    bots: tuple[str, ...]


def test_one_leave_wakes_every_waiter_and_those_still_clashing_wait_again() -> None:
    """Two runners' workers wait for the same deal (as ``_play_all``'s ``next_game``):
    a game that leaves wakes both; the first takes a game and enters it, so the second
    meets that one and waits again (on a new event: not spinning on the one already
    set) until it too leaves."""
    f = flight()
    queue = deque([Game(7, ("a", "b")), Game(7, ("b", "a"))])
    entered: list[tuple[str, Game]] = []
    tokens: dict[str, int] = {}

    async def worker(name: str) -> None:
        while queue:
            if (game := f.take(queue)) is not None:
                tokens[name] = f.enter(game.deal_seed, game.bots)
                entered.append((name, game))
                return
            await f.changed()

    async def main() -> None:
        first = f.enter(7, ("a", "c"))  # in flight: both queued games meet it
        with trio.fail_after(10):  # (a worker that spins never lets the others block)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(worker, "w1")
                nursery.start_soon(worker, "w2")
                await trio.testing.wait_all_tasks_blocked()
                assert entered == []  # both wait
                f.leave(first)
                await trio.testing.wait_all_tasks_blocked()
                # one (trio picks which) took the first game; the other met it
                [(winner, game)] = entered
                assert game == Game(7, ("a", "b")) and list(queue) == [Game(7, ("b", "a"))]
                f.leave(tokens[winner])
        loser = "w2" if winner == "w1" else "w1"
        assert entered[1] == (loser, Game(7, ("b", "a"))) and not queue

    trio.run(main)


def test_take_gives_the_first_game_that_meets_none_in_flight() -> None:
    f = flight()
    f.enter(7, ("a", "b"))
    queue = deque([Game(7, ("b", "a")), Game(7, ("c", "heuristic")), Game(8, ("a", "b"))])
    assert f.take(queue) == Game(7, ("c", "heuristic"))  # the rotation in doubt waits
    assert list(queue) == [Game(7, ("b", "a")), Game(8, ("a", "b"))]
    f.enter(8, ("a", "b"))
    assert f.take(queue) is None and len(queue) == 2  # each would meet a game in flight
