"""ffmpeg's words in our messages: its last line of errors, without the heap addresses it prefixes (issue 49); and
the bounds every ffmpeg runs under."""

import os

import numpy as np
import pytest
from conftest import clip_path, ffmpeg

from pipeline.errors import SubtitleError
from pipeline.media.audio import SAMPLE_RATE, _channels, audio_offset, audio_track, last_line, load_audio, probe


@pytest.mark.parametrize(
    "stderr, expected",
    [
        ("", "no output"),
        ("\n  \n", "no output"),
        ("one\ntwo\n\n", "two"),
        (
            "[out#0/mp4 @ 0x555dab907b00] Could not write header (incorrect codec parameters ?)\n",
            "Could not write header (incorrect codec parameters ?)",
        ),
        ("[mov,mp4,m4a,3gp,3g2,mj2 @ 0x7f00aa] moov atom not found\nin.mp4: Invalid data", "in.mp4: Invalid data"),
        ("[Parsed_ass_0 @ 0x1] [a @ 0x2] fontselect: failed", "fontselect: failed"),
        ("Error [in] brackets stay", "Error [in] brackets stay"),
    ],
)
def test_last_line(stderr, expected):
    assert last_line(stderr) == expected


def test_last_line_of_nothing_says_what_the_caller_knows():
    assert last_line("", "exit code 1") == "exit code 1"


@pytest.mark.parametrize(
    "name, content",
    [
        ("notes.mp4", b"a text file renamed"),
        ("empty.mkv", b""),
        ("noise.mp3", bytes(range(256)) * 64),
        ("page.webm", b"<!doctype html><html><body>404</body></html>"),
    ],
)
def test_a_file_that_is_not_media_gets_a_message_in_our_words(name, content, tmp_path):
    """Issue 50, item 5: ffmpeg's own text ("Error opening input files: Invalid data found...") reached the user,
    with "this server" on the CLI too. It goes to the log; the message says what to do."""
    (tmp_path / name).write_bytes(content)
    with pytest.raises(SubtitleError) as caught:
        probe(tmp_path / name)
    assert str(caught.value) == f"{name} is not a video or audio file: use MP4, MKV, WebM, MOV, MP3, WAV, …"


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".mp4", ".mov"])
def test_a_recording_cut_short_before_its_index_is_said_to_be(suffix, tmp_path):
    """A phone recording or download interrupted before its MP4 index (the moov atom, written last) was said to be
    "not a video or audio file". It is, cut short: the message says so and what to do."""
    whole, cut = tmp_path / f"whole{suffix}", tmp_path / f"cut{suffix}"
    ffmpeg("-i", str(clip_path("en_ljs_LJ001-0001")), "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25", "-map", "1:v",
           "-map", "0:a", "-shortest", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", str(whole))  # fmt: skip
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    with pytest.raises(SubtitleError, match=f"^cut{suffix} is cut short: its index .* is missing, as when a recording"):
        probe(cut)


@pytest.mark.parametrize(
    ("stream", "channels"),
    [
        ("Stream #0:0: Audio: aac (LC), 44100 Hz, stereo, fltp, 128 kb/s", 2),
        ("Stream #0:0: Audio: pcm_s16le, 8000 Hz, mono, s16, 128 kb/s", 1),
        ("Stream #0:1(eng): Audio: ac3, 48000 Hz, 5.1(side), fltp, 448 kb/s", 2),  # (more than one: all it tells)
        ("Stream #0:0: Audio: pcm_s24le, 96000 Hz, 4 channels, s32, 9216 kb/s", 4),
        ("Stream #0:0: Video: h264, yuv420p, 640x360", 1),  # (no audio listed)
    ],
)
def test_channels(stream, channels):
    assert _channels(f"Input #0, mov, from 'x':\n  {stream}\n") == channels


@pytest.mark.slow
def test_two_channels_that_cancel_out_as_mono_are_heard(tmp_path):
    """A stereo recording with one channel inverted (a miswired microphone) is silent as mono, L+R: it was transcribed
    as nothing. Its channels' difference is the speech, as a player's stereo output plays it."""
    clip = clip_path("en_ljs_LJ001-0001")
    inverted, stereo = tmp_path / "inverted.m4a", tmp_path / "stereo.m4a"
    ffmpeg("-i", str(clip), "-af", "pan=stereo|c0=c0|c1=-1*c0", "-c:a", "aac", str(inverted))
    ffmpeg("-i", str(clip), "-af", "pan=stereo|c0=c0|c1=0.5*c0", "-c:a", "aac", str(stereo))
    original = load_audio(clip)
    for path in (inverted, stereo):
        audio = load_audio(path)
        n = min(len(audio), len(original))
        assert abs(np.corrcoef(audio[:n], original[:n])[0, 1]) > 0.9, path.name  # the speech, not the cancelled mix


@pytest.mark.parametrize("util_linux", [True, False])
def test_every_ffmpeg_runs_bounded_in_a_group_of_its_own(util_linux, monkeypatch):
    """ffmpeg_popen's ffmpeg holds at most its memory (RLIMIT_DATA, as the kernel reports it) in a process group of its
    own, started through util-linux's setpriv and prlimit, or by a preexec_fn where they are missing."""
    import subprocess
    import time

    from pipeline.media import audio

    if util_linux and audio._guards() is None:
        pytest.skip("util-linux's setpriv and prlimit cannot run here")
    if not util_linux:
        monkeypatch.setattr(audio, "_guards", lambda: None)
    memory = 300 * 2**20
    command, bounds = audio.ffmpeg_popen("-nostdin", "-f", "lavfi", "-i", "anullsrc", "-f", "null", "-", memory=memory)
    assert ("preexec_fn" in bounds) is not util_linux
    with subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **bounds) as proc:
        try:
            limits = ""
            for _ in range(100):  # (setpriv execs prlimit, which execs ffmpeg: one process, ffmpeg at the end)
                program = open(f"/proc/{proc.pid}/cmdline", "rb").read().split(b"\0")[0]
                if b"ffmpeg" in os.path.basename(program):
                    limits = open(f"/proc/{proc.pid}/limits").read()
                    break
                time.sleep(0.05)
            data = next(line for line in limits.splitlines() if line.startswith("Max data size"))
            assert data.split()[3:5] == [str(memory), str(memory)]
            assert os.getpgid(proc.pid) == proc.pid  # its own group
        finally:
            audio.kill_group(proc)


_MP4_LATE = """  Duration: 00:00:14.00, start: 0.000000, bitrate: 1896 kb/s
  Stream #0:0[0x1](und): Video: h264 (Constrained Baseline) (avc1 / 0x31637661), yuv420p(progressive), 640x360, 25 fps
  Stream #0:1[0x2](und): Audio: aac (LC) (mp4a / 0x6134706D), 44100 Hz, stereo, fltp, 128 kb/s, start 1.976780 (default)
"""
_TS_LATE = """  Duration: 00:00:14.00, start: 1.400000, bitrate: 1990 kb/s
  Stream #0:0[0x100]: Video: h264 (Constrained Baseline) ([27][0][0][0] / 0x001B), 640x360, 90k tbn, start 1.400000
  Stream #0:1[0x101](und): Audio: aac (LC) ([15][0][0][0] / 0x000F), 44100 Hz, stereo, fltp, 130 kb/s, start 3.376778
"""
_TS = """  Duration: 00:00:11.02, start: 1.400000, bitrate: 16198 kb/s
  Stream #0:0[0x100]: Video: h264 (Constrained Baseline) ([27][0][0][0] / 0x001B), 1080x1920, 90k tbn, start 1.423222
  Stream #0:1[0x101](und): Audio: aac (LC) ([15][0][0][0] / 0x000F), 44100 Hz, stereo, fltp, 130 kb/s, start 1.400000
"""
_MP3 = """  Duration: 00:00:30.00, start: 0.138125, bitrate: 16 kb/s
  Stream #0:0: Audio: mp3 (mp3float), 8000 Hz, mono, fltp, 16 kb/s, start 0.138125
"""


@pytest.mark.parametrize(
    "listing, expected",
    [
        (_MP4_LATE, 1.97678),  # audio 2 s after the picture (ffmpeg's listings of real files, abridged)
        (_TS_LATE, 3.376778 - 1.4),  # a broadcast capture: its timeline starts at 1.4 s
        (_TS, 0.0),  # the audio starts with the file, the picture 23 ms later
        (_MP3, 0.0),  # an MP3's encoder delay: the file starts with its audio
        (_MP4_LATE.replace("start 1.976780 ", ""), 0.0),  # no start of its own: the file's
        (_MP4_LATE.replace("00:00:14.00", "N/A"), 0.0),  # a file that does not say how long it is
        (_MP4_LATE.replace("00:00:14.00", "00:00:01.50"), 1.5),  # never past its end
        (_TS_LATE.replace("start 3.376778", "start 0.400000"), 0.0),  # (never before its start)
        ("  Stream #0:0: Video: h264, 640x360, start 1.000000\n", 0.0),  # no audio
    ],
)
def test_audio_offset(listing, expected):
    assert audio_offset(listing) == pytest.approx(expected)


@pytest.mark.slow
@pytest.mark.parametrize("made", ["late.mp4", "late.ts", "gap.mp4"])
def test_audio_is_placed_on_the_files_timeline(made, tmp_path):
    """Cues meet the picture when the audio does not run from the file's start without a break. A video whose audio
    starts 1.5 s after its picture (a screen recording, a trimmed or joined video) was decoded from its first sample,
    and every cue came 1.5 s before its speech; one whose audio stream skips 1 s (dropped audio) put every cue after
    the gap 1 s early. Now the audio is decoded as a player plays it: silence until the audio starts (in an MP4, and in
    an MPEG-TS whose timeline starts at 1.4 s) and through the gap, the speech where the picture has it."""
    clip = tmp_path / "speech.wav"
    ffmpeg("-i", str(clip_path("en_ljs_LJ001-0001")), "-t", "3", str(clip))
    picture = ["-f", "lavfi", "-i", "testsrc2=size=160x120:rate=10:duration=5"]
    video = ["-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac"]
    out = tmp_path / made
    if made == "gap.mp4":  # the audio's timestamps jump by 1 s at the first frame from 1.5 s (at 1.58 s)
        ffmpeg(*picture, "-i", str(clip), "-filter_complex", "[1:a]asetpts='if(gte(T,1.5),PTS+1/TB,PTS)'[a]",
               "-map", "0:v", "-map", "[a]", *video, str(out))  # fmt: skip
        silent, pieces = (1.62, 2.55), [(0.5, 1.0, 0.5), (2.0, 2.5, 3.0)]  # (clip's from, to, where it lies now)
    else:
        mp4 = tmp_path / "late.mp4"
        ffmpeg(*picture, "-itsoffset", "1.5", "-i", str(clip), "-map", "0:v", "-map", "1:a", *video, str(mp4))
        if made == "late.ts":
            ffmpeg("-i", str(mp4), "-c", "copy", "-f", "mpegts", str(out))
        silent, pieces = (0.0, 1.45), [(0.5, 1.0, 2.0), (2.0, 2.5, 3.5)]
    speech, decoded = load_audio(clip), load_audio(out)
    assert len(decoded) / SAMPLE_RATE == pytest.approx(len(speech) / SAMPLE_RATE + (1.0 if "gap" in made else 1.5),
                                                       abs=0.1)  # fmt: skip
    assert np.abs(decoded[int(silent[0] * SAMPLE_RATE) : int(silent[1] * SAMPLE_RATE)]).max() < 1e-3
    for a, b, expected in pieces:
        heard = np.correlate(decoded, speech[int(a * SAMPLE_RATE) : int(b * SAMPLE_RATE)], "valid")
        assert np.argmax(heard) / SAMPLE_RATE == pytest.approx(expected, abs=0.05)


_TWO_TRACKS = """  Stream #0:0: Video: h264 (Constrained Baseline), yuv420p(tv, progressive), 320x240 [SAR 1:1 DAR 4:3], 25 fps
  Stream #0:1(fra): Audio: aac (LC), 44100 Hz, mono, fltp
  Stream #0:2(eng): Audio: aac (LC), 44100 Hz, stereo, fltp (default)
"""


@pytest.mark.parametrize(
    "listing, expected",
    [
        (_TWO_TRACKS, 1),  # a player plays the track marked default (ffmpeg's listing of a real file)
        (_TWO_TRACKS.replace(" (default)", ""), 0),  # none marked: the first
        (_TWO_TRACKS.replace("fltp\n", "fltp (default)\n", 1), 0),  # both: the first of them
        (_MP4_LATE, 0),
        ("  Stream #0:0: Video: h264 (default)\n", 0),  # no audio (the decode says so)
    ],
)
def test_audio_track(listing, expected):
    assert audio_track(listing) == expected


@pytest.mark.slow
def test_the_track_a_player_plays_is_transcribed(tmp_path):
    """A video with a tone on its first audio track and the speech on its second, marked default (as a film with a
    dubbed or commentary track first): a player plays the speech, and the tone was transcribed (no cues at all)."""
    film = tmp_path / "film.mkv"
    ffmpeg("-f", "lavfi", "-i", "testsrc2=size=160x120:rate=10:duration=3", "-f", "lavfi", "-i", "sine=frequency=440",
           "-i", str(clip_path("en_ljs_LJ001-0001")), "-t", "3", "-map", "0:v", "-map", "1:a", "-map", "2:a",
           "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-disposition:a:0", "0",
           "-disposition:a:1", "default", str(film))  # fmt: skip
    assert probe(film).audio_track == 1
    speech, decoded = load_audio(clip_path("en_ljs_LJ001-0001"))[: 3 * SAMPLE_RATE], load_audio(film)
    heard = np.correlate(decoded, speech[SAMPLE_RATE : 2 * SAMPLE_RATE], "valid")
    assert np.argmax(heard) / SAMPLE_RATE == pytest.approx(1.0, abs=0.05)
    assert heard.max() > 0.5 * np.dot(speech[SAMPLE_RATE : 2 * SAMPLE_RATE], speech[SAMPLE_RATE : 2 * SAMPLE_RATE])
