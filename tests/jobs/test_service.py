"""The page's memory of word times (issue 49, item 4): counted in bytes, bounded per client and in all, and one
client's cues never evict another's while the total has room."""

from __future__ import annotations

import tracemalloc

from pipeline.asr.results import Word
from pipeline.jobs.service import WordTimes
from pipeline.subtitles.cues import Cue


def cues(n: int, words: int, at: float = 0.0) -> list[Cue]:
    """n cues of `words` timed words each."""
    out = []
    for i in range(n):
        start = at + 10.0 * i
        said = tuple(Word(start + k * 0.05, start + k * 0.05 + 0.04, f" w{k}") for k in range(words))
        out.append(Cue(start, start + 9.0, "".join(w.word for w in said).strip(), said))
    return out


def test_word_bytes_is_what_python_holds_for_a_word():
    tracemalloc.start()
    try:
        held = tuple(Word(0.1 * k, 0.1 * k + 0.05, f" w{k:05d}", 0.9) for k in range(20_000))
        measured = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert 0.75 * WordTimes.size(held) <= measured <= 1.25 * WordTimes.size(held)


def test_a_client_keeps_its_own_cues_words():
    kept = WordTimes()
    mine = cues(3, 4)
    kept.remember("a", mine)
    assert [kept.words("a", c) for c in mine] == [c.words for c in mine]
    assert kept.words("b", mine[0]) is None  # another client's table does not get them
    assert kept.words("a", Cue(mine[0].start, mine[0].end, "edited")) is None


def test_one_client_is_held_to_its_share_and_evicts_only_its_own_oldest():
    kept = WordTimes(per_client=200_000, total=1_000_000)
    other = cues(2, 10)
    kept.remember("other", other)
    flood = cues(400, 110, at=1000.0)  # a WebVTT with 110 word stamps a cue, 40 times what fits
    kept.remember("flood", flood)
    assert kept.bytes <= 200_000 + WordTimes.size(other[0].words) * 2
    assert kept.words("flood", flood[0]) is None and kept.words("flood", flood[-1]) == flood[-1].words
    assert [kept.words("other", c) for c in other] == [c.words for c in other]


def test_the_total_evicts_the_oldest_client_first():
    kept = WordTimes(per_client=100_000, total=80_000)
    first, second = cues(20, 10), cues(20, 10, at=500.0)
    kept.remember("first", first)
    kept.remember("second", second)
    assert kept.bytes <= 80_000
    assert kept.words("first", first[0]) is None and kept.words("second", second[0]) == second[0].words
