"""How a learning test is judged (``tests.support.learning.first_or_second_seed``): the first seed,
and the second only when the first falls short; two short seeds fail the test with both results.
And when a run may stop early (``HeldAbove``): once its score has held for HOLD_STEPS steps."""

from __future__ import annotations

import pytest

from tests.support.learning import HeldAbove, SeedFellShort, first_or_second_seed


def test_the_first_seed_that_learns_is_taken_and_no_other_is_tried():
    tried: list[int] = []

    def trial(seed: int) -> float:
        tried.append(seed)
        return {1: 0.95, 2: 0.1}[seed]

    assert first_or_second_seed(trial, lambda score: score > 0.9) == 0.95
    assert tried == [1]


def test_the_second_seed_is_tried_when_the_first_falls_short():
    tried: list[int] = []

    def trial(seed: int) -> float:
        tried.append(seed)
        return {7: 0.2, 8: 0.97}[seed]

    with pytest.warns(SeedFellShort, match=r"seed 7 fell short: 0.2"):  # named in pytest's summary
        assert first_or_second_seed(trial, lambda score: score > 0.9, seeds=(7, 8)) == 0.97
    assert tried == [7, 8]


def test_two_seeds_short_fail_with_both_results():
    with (
        pytest.warns(SeedFellShort),
        pytest.raises(pytest.fail.Exception, match=r"seeds \[1, 2\]: \{1: 0.2, 2: 0.3\}"),
    ):
        first_or_second_seed(lambda seed: {1: 0.2, 2: 0.3}[seed], lambda score: score > 0.9)


def test_a_hold_counts_summary_steps_and_restarts_when_the_score_dips():
    scores = iter([0.95, 0.95, 0.5, 0.95, 0.95, 0.95])
    held = HeldAbove(lambda: next(scores), 0.9, steps=200)
    curve = [(100 * n, 0.0) for n in range(1, 7)]
    assert [held(curve[:n]) for n in range(1, 7)] == [False, False, False, False, False, True]


def test_a_hold_on_a_clock_ignores_interleaved_summary_steps():
    """Two self-play behaviors each count their own steps: their summaries' steps go back and
    forth, so the hold reads the environment's steps instead."""
    clock = iter([1000, 1200, 1400, 1600])
    held = HeldAbove(lambda: 0.95, 0.9, steps=500, clock=lambda: next(clock))
    curve = [(300, 0.0), (100, 0.0), (400, 0.0), (200, 0.0)]
    assert [held(curve[: n + 1]) for n in range(4)] == [False, False, False, True]
