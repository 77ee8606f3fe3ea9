"""Live ratings: they follow the published Bradley-Terry order, and anchor on house bots."""

from __future__ import annotations

import math

import numpy as np
import pytest

from arena.league.live import LiveRatings
from arena.league.sim import Model, kendall_tau, new_world
from arena.stats.ratings import GameScores, fit_elo, pairwise, rate, same_cards


def league(bots: int, sets: int, seed: int) -> tuple[list[GameScores], list[str], dict[str, float]]:
    """``sets`` duplicate sets of random tables among ``bots`` ranked bots and two house
    bots, from the simulation's model (true skills known)."""
    world = new_world(Model(bots=bots, seats=4, house=2), seed)
    rng = np.random.default_rng(seed)
    games: list[GameScores] = []
    for _ in range(sets):
        table = [int(b) for b in rng.choice(len(world.names), 4, replace=False)]
        games += world.play(table)
    skills = {name: float(s) for name, s in zip(world.names, world.skills, strict=True)}
    house = {name: world.live.rating(name).elo for name in world.house}
    return games, world.ranked, {**skills, **{f"elo:{k}": v for k, v in house.items()}}


@pytest.mark.parametrize("compare", ["games", "cards"])
def test_live_order_agrees_with_the_published_order_on_a_settled_league(compare: str) -> None:
    games, ranked, known = league(40, 1500, seed=3)
    house = {name[4:]: elo for name, elo in known.items() if name.startswith("elo:")}
    live = LiveRatings(ranked, house, compare=compare)
    for game in games:  # as the league would: one update after every game
        live.record(game)
    fitted = games if compare == "games" else same_cards(games)
    published = {r.name: r.elo for r in rate(fitted, resamples=100, seed=1)}
    live_elo = {r.name: r.elo for r in live.ranking()}
    assert set(live_elo) == set(ranked)  # house bots are not ranked
    tau = kendall_tau([live_elo[b] for b in ranked], [published[b] for b in ranked])
    # Both fit the same comparisons with the same model; they differ only where the live
    # fit lags (local steps for up to refresh_every games since the last full step) and
    # in what fixes the scale (anchors and a prior at 1500 here, the pool mean there).
    # Those move ratings by well under an Elo point, against gaps of ~7 Elo between
    # neighbours of 40 bots: at most a pair or two of 780 may swap (tau >= 0.995).
    assert tau >= 0.995
    live.settle()
    settled = {r.name: r.elo for r in live.ranking()}
    assert kendall_tau([settled[b] for b in ranked], [published[b] for b in ranked]) >= 0.995
    # and both find the true order about equally well
    truth = [known[b] for b in ranked]
    t_live = kendall_tau([settled[b] for b in ranked], truth)
    t_published = kendall_tau([published[b] for b in ranked], truth)
    assert t_live > 0.8 and abs(t_live - t_published) < 0.02


def test_without_house_bots_a_settled_fit_is_the_published_fit() -> None:
    games, _, _ = league(12, 200, seed=5)
    games = [g for g in games if not any(b.startswith("house") for b in g.bots)]
    live = LiveRatings()
    live.record_set(games)
    live.settle()
    fitted = fit_elo(games)
    live_elo = {r.name: r.elo for r in live.ranking()}
    shift = np.mean([live_elo[b] - fitted[b] for b in fitted])
    # the same maximum up to the level (prior at 1500 instead of at the pool mean):
    # the differences are equal to a fraction of an Elo point
    assert max(abs(live_elo[b] - fitted[b] - shift) for b in fitted) < 0.5
    # sigma: close to the bootstrap's spread over duplicate sets (docs/league.md)
    boot = {r.name: (r.high - r.low) / 3.92 for r in rate(games, resamples=300, seed=2)}
    ratio = np.median([boot[b] / live.rating(b).sigma for b in fitted])
    assert 0.6 < ratio < 1.5


def test_house_bots_keep_their_rating_and_anchor_the_scale() -> None:
    live = LiveRatings(["a", "b"], {"house": 1700.0})
    for k in range(30):
        # a beats the house bot, which beats b: a above 1700, b below
        live.record(GameScores(f"u{k}", ("a", "house", "b"), (3.0, 2.0, 1.0)))
    live.settle()
    assert live.rating("house").elo == 1700.0 and live.rating("house").sigma == 0.0
    assert live.rating("a").elo > 1700.0 > live.rating("b").elo
    assert [r.name for r in live.ranking()] == ["a", "b"]
    assert live.is_house("house") and not live.is_house("a")
    # shifting the anchor shifts the others with it
    moved = LiveRatings(["a", "b"], {"house": 1800.0})
    for k in range(30):
        moved.record(GameScores(f"u{k}", ("a", "house", "b"), (3.0, 2.0, 1.0)))
    moved.settle()
    assert moved.rating("a").elo - live.rating("a").elo == pytest.approx(100.0, abs=25.0)


def test_sigma_shrinks_with_games_and_a_new_bot_is_at_the_prior() -> None:
    live = LiveRatings(["a", "b", "c", "fresh"])
    assert live.rating("fresh").elo == 1500.0
    before = live.rating("a").sigma
    rng = np.random.default_rng(0)
    sigmas = []
    for k in range(200):
        scores = tuple(float(x) for x in rng.normal(0, 1, 3))
        live.record(GameScores(f"u{k}", ("a", "b", "c"), scores))
        if k in (9, 49, 199):
            sigmas.append(live.rating("a").sigma)
    assert before > sigmas[0] > sigmas[1] > sigmas[2] > 0
    # about 1 / sqrt(games): 4 times the games, about half as wide
    assert sigmas[1] / sigmas[2] == pytest.approx(2.0, rel=0.15)
    assert live.rating("fresh").sigma == before and live.rating("fresh").games == 0
    assert live.rating("a").games == 200


def test_unbeaten_bots_stay_finite_and_ties_split() -> None:
    live = LiveRatings()
    for k in range(50):
        live.record(GameScores(f"u{k}", ("top", "mid", "low"), (9.0, 5.0, 5.0)))
    live.settle()
    top, mid, low = (live.rating(n) for n in ("top", "mid", "low"))
    assert math.isfinite(top.elo) and top.elo > mid.elo
    assert mid.elo == pytest.approx(low.elo)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="prior_draws"):
        LiveRatings(prior_draws=0)
    with pytest.raises(ValueError, match="inflation"):
        LiveRatings(inflation=-1)
    with pytest.raises(ValueError, match="non-finite"):
        LiveRatings(house={"h": math.nan})
    with pytest.raises(ValueError, match="refresh_every"):
        LiveRatings(refresh_every=0)
    with pytest.raises(ValueError, match="compare"):
        LiveRatings(compare="sets")
    live = LiveRatings(compare="cards")
    live.record(GameScores("u", ("a", "b", "c"), (1.0, 2.0, 3.0)))
    with pytest.raises(ValueError, match="seats"):
        live.record(GameScores("u", ("a", "b"), (1.0, 2.0)))
    with pytest.raises(ValueError, match="seats"):
        same_cards([GameScores("u", ("a", "b", "c"), (1.0, 2.0, 3.0)),
                    GameScores("u", ("a", "b"), (1.0, 2.0))])


def test_same_cards_comparisons_are_free_of_the_deals_luck() -> None:
    """Without play noise, every comparison of the same cards is won by the better bot;
    comparisons of the seats of one game are not (the cards' luck decides some)."""
    world = new_world(Model(bots=10, seats=4, luck_sd=2.0, noise_sd=0.0), seed=2)
    rng = np.random.default_rng(2)
    games: list[GameScores] = []
    for _ in range(60):
        games += world.play([int(b) for b in rng.choice(10, 4, replace=False)])
    skill = dict(zip(world.names, world.skills, strict=True))

    def upsets(fitted: list[GameScores]) -> float:
        names, wins = pairwise(fitted)
        return sum(float(wins[i, j]) for i, a in enumerate(names)
                   for j, b in enumerate(names) if skill[a] < skill[b])

    cards = same_cards(games)
    assert upsets(cards) == 0 and upsets(games) > 50
    # 4 seats x 6 pairs a set: as many comparisons as the games give
    assert pairwise(cards)[1].sum() == pairwise(games)[1].sum() == 60 * 24
    # and the live ratings compare the same: after each game, or with the sets
    # interleaved (a unit's games need not follow one another); with play noise, so that
    # the fit is not at the prior's mercy
    noisy = new_world(Model(bots=10, seats=4, luck_sd=2.0, noise_sd=1.0), seed=2)
    games = []
    for _ in range(60):
        games += noisy.play([int(b) for b in rng.choice(10, 4, replace=False)])
    cards = same_cards(games)
    one, mixed = LiveRatings(compare="cards"), LiveRatings(compare="cards")
    for game in games:
        one.record(game)
    for k in range(4):
        for game in games[k::4]:
            mixed.record(game, update=False)
    one.settle()
    mixed.settle()
    published = fit_elo(cards)
    shift = np.mean([one.rating(b).elo - published[b] for b in published])
    for b in published:
        assert one.rating(b).elo - shift == pytest.approx(published[b], abs=0.5)
        assert mixed.rating(b).elo == pytest.approx(one.rating(b).elo, abs=1e-6)
    # a unit's first game has nothing to be compared with yet
    first = LiveRatings(compare="cards")
    first.record(games[0])
    assert first._wins.sum() == 0.0
    first.record(games[1])
    assert first._wins.sum() == 4.0


def test_the_league_rates_whole_sets_by_the_same_cards() -> None:
    """The league's update path (:class:`arena.league.sets.WholeSets`, what
    ``rebuild_ratings`` and the run after each game use): a set counts once whole, and
    then its bots are compared with those that held the same cards. Seat 0's cards are
    worth 100 points, far more than any skill: compared by game, the bot holding them
    wins whatever it is; compared by cards, the better bot wins every comparison."""
    from arena.league.audit import game_of
    from arena.league.sets import COMPARE, WholeSets

    skill = {"a": 3.0, "b": 2.0, "c": 1.0, "d": 0.0, "e": 1.5}
    tables = [("a", "b", "c", "d"), ("e", "d", "b", "a"), ("c", "e", "a", "b")]
    games = []
    for n, table in enumerate(tables):
        for r in range(4):
            g = game_of(n, 1, table, 7, r)
            games.append(GameScores(g.unit, g.bots, tuple(
                skill[b] + (100.0 if s == 0 else 0.0) for s, b in enumerate(g.bots))))
    assert COMPARE == "cards"
    live = LiveRatings([b for b in skill if b != "d"], {"d": 1400.0}, compare=COMPARE)
    sets = WholeSets(live, 4)
    # the rotations arrive in any order; a set is recorded only with its last one
    order = [2, 0, 3, 1]
    for k, i in enumerate(order):
        assert sets.add(games[i]) == (k == 3)
        assert live.rating("a").games == (4 if k == 3 else 0)
    for game in games[4:]:
        sets.add(game)
    assert not sets.held
    live.settle()
    # no worse bot ever beats a better one: the deal's luck cancelled from every comparison
    names, wins = pairwise(same_cards(games))
    upsets = sum(float(wins[i, j]) for i, x in enumerate(names)
                 for j, y in enumerate(names) if skill[x] < skill[y])
    assert upsets == 0
    _, by_game = pairwise(games)
    assert sum(float(by_game[i, j]) for i, x in enumerate(names)
               for j, y in enumerate(names) if skill[x] < skill[y]) >= 12  # the lucky seat
    assert [r.name for r in live.ranking()] == ["a", "b", "e", "c"]  # d: the house bot
    # and the settled live fit is the published fit of the same cards
    published = {r.name: r.elo for r in rate(same_cards(games), resamples=10,
                                             fixed={"d": 1400.0})}
    for name in skill:
        assert live.rating(name).elo == pytest.approx(published[name], abs=0.01)
