"""Random streams derived from one seed are reproducible and do not replay each other.

An acting policy seeded ``seed + 1`` once sampled its actions from the same stream that drew
the critic's initial weights (also ``seed + 1``): on built-in Basic 8 of 50 seeds then locked
onto the small goal; with independent streams 5 of 59 do (ML-Agents' trainer: 2 of 40)."""

from __future__ import annotations

import itertools

import torch

from trainers.seeding import Stream, generator, stream_seed


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
