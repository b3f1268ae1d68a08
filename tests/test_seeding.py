"""Random streams derived from one seed are reproducible and do not replay each other.

An acting policy seeded ``seed + 1`` once sampled its actions from the same stream that drew
the critic's initial weights (also ``seed + 1``): on built-in Basic 8 of 50 seeds then locked
onto the small goal; with independent streams 5 of 59 do (ML-Agents' trainer: 2 of 40)."""

from __future__ import annotations

import itertools
import logging

import pytest
import torch

from trainers.seeding import Stream, generator, restore, stream_seed


def draws(g: torch.Generator) -> torch.Tensor:
    return torch.rand(64, generator=g)


def test_the_same_seed_and_stream_reproduce_their_draws():
    assert torch.equal(draws(generator(7, Stream.SHUFFLE)), draws(generator(7, Stream.SHUFFLE)))


def test_no_two_streams_of_neighbouring_seeds_share_a_seed_or_draws():
    keys = [(seed, stream) for seed in range(50) for stream in Stream]
    seeds = {stream_seed(seed, stream) for seed, stream in keys}
    assert len(seeds) == len(keys)
    for (s1, a), (s2, b) in itertools.combinations([(0, s) for s in Stream] + [(1, s) for s in Stream], 2):
        assert not torch.equal(draws(generator(s1, a)), draws(generator(s2, b))), (s1, a, s2, b)


def test_a_restored_stream_continues_where_it_was_saved():
    g = generator(3, Stream.UPDATE_NOISE)
    draws(g)
    saved = g.get_state()
    expected = draws(g)
    fresh = generator(3, Stream.UPDATE_NOISE)
    restore(fresh, saved, "noise_rng")
    assert torch.equal(draws(fresh), expected)


def test_a_stream_saved_on_another_device_restarts_from_its_seed(caplog: pytest.LogCaptureFixture):
    """A run trained on a GPU resumed on the CPU: CUDA's generator state (16 bytes) cannot set
    the CPU's; the stream starts over from its seed rather than the resume failing."""
    cuda_like_state = torch.zeros(16, dtype=torch.uint8)
    g = generator(3, Stream.UPDATE_NOISE)
    draws(g)
    with caplog.at_level(logging.INFO):
        restore(g, cuda_like_state, "SAC's noise_rng")
    assert torch.equal(draws(g), draws(generator(3, Stream.UPDATE_NOISE)))
    assert "SAC's noise_rng was saved on another device" in caplog.text
