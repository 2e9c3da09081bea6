"""The speed benchmark's arithmetic over rounds (benchmarks/speed.py --rounds): medians of ratios taken within a
round, so that a round the machine ran slower slows both sides of it."""

from __future__ import annotations

import pytest

from benchmarks.speed import paired


@pytest.mark.parametrize(
    "rounds, expected",
    [
        # one round: the figures themselves
        ([{"a": 50.0, "b": 55.0}], {"a": (50.0, 1.0), "b": (55.0, 1.1)}),
        # the machine ran 30 % slower in round 2: wall times spread, the ratio within each round does not
        (
            [{"a": 50.0, "b": 55.0}, {"a": 65.0, "b": 71.5}, {"a": 52.0, "b": 57.2}],
            {"a": (52.0, 1.0), "b": (57.2, 1.1)},
        ),
        # the median of the ratios, not the ratio of the medians (61.5 / 55 = 1.12)
        (
            [{"a": 50.0, "b": 45.0}, {"a": 40.0, "b": 60.0}, {"a": 60.0, "b": 66.0}, {"a": 70.0, "b": 63.0}],
            {"a": (55.0, 1.0), "b": (61.5, 1.0)},
        ),
        # against the other engine: half the time
        ([{"b": 80.0, "a": 40.0}, {"b": 90.0, "a": 45.0}], {"b": (85.0, 1.0), "a": (42.5, 0.5)}),
    ],
)
def test_paired(rounds, expected):
    reference = next(iter(rounds[0]))
    got = paired(rounds, reference)
    assert got.keys() == expected.keys()
    for name, (wall, ratio) in expected.items():
        assert got[name] == pytest.approx((wall, ratio), abs=1e-9)
