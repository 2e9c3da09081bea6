"""The output-equality check of benchmarks/same_output.py: pure functions, table-driven."""

from __future__ import annotations

import json

import pytest

from benchmarks.same_output import difference, seeds


def out(*cues) -> str:
    return json.dumps({"segments": [
        {"start": s, "end": e, "text": t, "words": [{"word": w, "start": ws, "end": we} for w, ws, we in words]}
        for s, e, t, words in cues
    ]})  # fmt: skip


HI = (1.0, 2.0, "Hi there", [(" Hi", 1.0, 1.4), (" there", 1.5, 2.0)])


@pytest.mark.parametrize(
    "now, found",
    [
        (out(HI), None),
        (out((1.0004, 2.0, "Hi there", HI[3])), None),  # under half a millisecond: the same in SRT and JSON
        (out((1.001, 2.0, "Hi there", HI[3])), "cue 1 (1.000 s): 1.000-2.000 saved, 1.001-2.000 now"),
        (out((1.0, 2.0, "Hi, there", HI[3])), "cue 1 (1.000 s): 'Hi there' saved, 'Hi, there' now"),
        (out((1.0, 2.0, "Hi there", [(" Hi", 1.0, 1.4), (" there", 1.6, 2.0)])),
         "cue 1 (1.000 s), word 2: [(' there', 1500, 2000)] saved, [(' there', 1600, 2000)] now"),
        (out((1.0, 2.0, "Hi there", HI[3][:1])), "cue 1 (1.000 s), word 2: [(' there', 1500, 2000)] saved, [] now"),
        (out(HI, HI), "1 cues saved, 2 now"),
    ],
)  # fmt: skip
def test_difference(now, found):
    assert difference(out(HI), now) == found


@pytest.mark.parametrize("text, expected", [("1-3", [1, 2, 3]), ("7", [7]), ("1,4-5", [1, 4, 5])])
def test_seeds(text, expected):
    assert seeds(text) == expected
