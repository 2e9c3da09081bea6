"""End to end on real speech: the CLI on an mp4 built from real clips, languages, silence, bad input, the IR cache."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jiwer
import numpy as np
import pytest
import srt
from conftest import ENGLISH, SPANISH, clip_path, ffmpeg, mute_video, wer
from whisper.normalizers import BasicTextNormalizer

from convert.checkpoints import Checkpoint, resolve_checkpoint
from convert.export import ensure_ir
from convert.ir_layout import EXPORT_VERSION
from pipeline import SubtitleError, TranscribeOptions, subtitle_file, timings, transcribe
from pipeline.media.audio import ffmpeg_exe

pytestmark = pytest.mark.slow  # end-to-end: real speech through real models

GAP = 2.0  # seconds of silence between clips


def cli(*args: str, env_cache: Path) -> subprocess.CompletedProcess:
    import os

    env = {**os.environ, "SUBTITLE_CACHE_DIR": str(env_cache)}
    return subprocess.run(
        [sys.executable, "-m", "pipeline", *args], capture_output=True, text=True, env=env, timeout=900
    )


@pytest.fixture(scope="module")
def composed_mp4(tmp_path_factory) -> Path:
    """An H.264 + AAC mp4: the English clips with 2 s of silence between them, over a test-pattern video."""
    d = tmp_path_factory.mktemp("composed")
    inputs, filters = [], []
    for i, clip in enumerate(ENGLISH):
        inputs += ["-i", str(clip_path(clip))]
        filters.append(f"[{i}:a]aresample=16000,aformat=channel_layouts=mono,apad=pad_dur={GAP}[a{i}]")
    joined = "".join(f"[a{i}]" for i in range(len(ENGLISH)))
    graph = ";".join(filters) + f";{joined}concat=n={len(ENGLISH)}:v=0:a=1[a]"
    out = d / "talk with spaces.mp4"
    ffmpeg(*inputs, "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25", "-filter_complex", graph,
           "-map", f"{len(ENGLISH)}:v", "-map", "[a]", "-shortest", "-c:v", "libx264", "-preset", "ultrafast",
           "-c:a", "aac", str(out))  # fmt: skip
    return out


def test_cli_on_composed_video(composed_mp4, manifest, model_cache, tmp_path):
    proc = cli(str(composed_mp4), "--output-dir", str(tmp_path), "--format", "srt,vtt,txt,json", "--timings",
               env_cache=model_cache)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    srt_path = tmp_path / "talk with spaces.srt"
    assert {p.suffix for p in tmp_path.iterdir()} == {".srt", ".vtt", ".txt", ".json"}

    text = srt_path.read_text(encoding="utf-8")
    cues = list(srt.parse(text))  # the srt library parses it
    assert [c.index for c in cues] == list(range(1, len(cues) + 1))
    duration = sum(float(manifest[c]["duration_s"]) + GAP for c in ENGLISH)
    for previous, cue in zip(cues, cues[1:]):
        assert previous.start <= cue.start and previous.end <= cue.start
    assert all(0 <= c.start.total_seconds() < c.end.total_seconds() <= duration + 0.5 for c in cues)

    # ffmpeg parses it too (as a subtitle stream it can convert)
    subprocess.run(
        [ffmpeg_exe(), "-nostdin", "-v", "error", "-i", str(srt_path), "-f", "webvtt", "-"],
        check=True,
        capture_output=True,
    )

    reference = " ".join(manifest[c]["reference_text"] for c in ENGLISH)
    hypothesis = " ".join(c.content for c in cues)
    assert wer(reference, hypothesis) <= 0.10
    assert "%" in proc.stderr  # progress went to stderr

    # --timings: where the process spent its time, each stage once or more, within the process's time
    wall = float(re.search(r"time: ([\d.]+) s", proc.stderr).group(1))
    rows = {m[1]: (float(m[2]), int(m[3])) for m in re.finditer(r"^\| ([a-z ]+) \| ([\d.]+) \| \d+ % \| (\d+) \|",
                                                               proc.stderr, re.M)}  # fmt: skip
    stages = ["imports", "model load", "audio", "detector", "decode", "word timing", "cues", "write"]
    assert set(stages) <= set(rows) and all(rows[name][1] >= 1 for name in stages), proc.stderr
    assert 0 < sum(rows[name][0] for name in stages) <= wall
    passes, steps = rows["of which encoder"][1], rows["of which decoder"][1]
    assert 1 <= passes < steps  # (many decoder steps a window)
    inside = rows["decode"][0] + rows["word timing"][0] + rows.get("language", (0.0,))[0]
    assert rows["of which encoder"][0] + rows["of which decoder"][0] <= inside


def test_language_detected_on_the_first_windows_encoding(ov_model, audio):
    """In auto language the first window's encoder pass serves both the detection and the window's decode (and its
    word timing): a one-window clip is encoded once, not twice."""
    timings.enable()
    before = timings.count("encoder")
    segments, info = transcribe(audio("en_ls_61-70968-0000"), ov_model, TranscribeOptions(word_timestamps=True))
    assert info.language == "en" and info.language_probability > 0.5
    assert "wizard" in " ".join(s.text for s in segments).lower()
    assert timings.count("encoder") - before == 1


def test_spanish_detected_and_translated(ov_model, audio, manifest):
    segments, info = transcribe(audio(SPANISH), ov_model, TranscribeOptions())
    assert info.language == "es" and info.language_probability > 0.5
    spanish = " ".join(s.text for s in segments)
    normalize = BasicTextNormalizer()
    assert jiwer.wer(normalize(manifest[SPANISH]["reference_text"]), normalize(spanish)) <= 0.3  # measured 0.16

    segments, info = transcribe(audio(SPANISH), ov_model, TranscribeOptions(task="translate"))
    english = " ".join(s.text for s in segments).lower()
    assert info.language == "es" and info.task == "translate"
    # the reference opens "la sorpresa y el disgusto ... mientras le hablaba Carlos"
    assert {"surprise", "disgust", "carlos"} <= set(re.findall(r"[a-z]+", english))
    assert not {"sorpresa", "disgusto", "que", "el", "la"} & set(re.findall(r"[a-z]+", english))


def test_silence_gives_no_cues(ov_model, tmp_path):
    silent = tmp_path / "silence.wav"
    ffmpeg("-f", "lavfi", "-i", "anullsrc=r=16000:cl=mono", "-t", "40", str(silent))
    result = subtitle_file(silent, ov_model)
    assert result.cues == ()
    assert result.info.duration == pytest.approx(40, abs=0.1)


def test_video_without_audio_is_a_clear_error(ov_model, model_cache, tmp_path):
    video = mute_video(tmp_path / "mute.mp4")
    with pytest.raises(SubtitleError, match="has no audio track"):
        subtitle_file(video, ov_model)
    out = tmp_path / "out"
    proc = cli(str(video), "--output-dir", str(out), env_cache=model_cache)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["error: mute.mp4 has no audio track: choose a file with sound"]
    assert not out.exists() or not any(out.iterdir())  # nothing half-written


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.mp4"], "missing.mp4 does not exist"),
        (["{clip}", "--format", "srt,docx"], "--format: Unknown format 'docx': use srt, vtt, txt, json, ass or rttm"),
        (["{clip}", "--language", "klingon"], "Unknown language 'klingon'"),
        (["{clip}", "--model", "huge"], "Unknown model 'huge'"),
        (["{clip}", "--vad-threshold", "2"], "--vad-threshold: The speech threshold is a probability"),
    ],
)
def test_cli_errors_are_one_line_with_exit_code_2(args, message, model_cache, tmp_path):
    args = [a.replace("{clip}", str(clip_path(ENGLISH[3]))) for a in args]
    proc = cli(*args, "--output-dir", str(tmp_path), env_cache=model_cache)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr


def test_cli_errors_come_before_the_engine_is_imported(tmp_path):
    """Bad input is refused in a fraction of a second: torch, whisper and OpenVINO (2 s to import) are not loaded."""
    clip = str(clip_path(ENGLISH[3]))
    cases = [["missing.mp4", "-l", "en"], [clip, "--format", "srt,docx"], [clip, "--language", "klingon"],
             [clip, "--model", "huge"], [clip, "--vad-threshold", "2"]]  # fmt: skip
    code = (
        "import sys\nfrom pipeline.__main__ import main\n"
        f"print([main([*args, '-o', {str(tmp_path)!r}]) for args in {cases!r}])\n"
        "print(sorted(m for m in ('torch', 'whisper', 'openvino') if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=Path(__file__).parents[1], capture_output=True, text=True, timeout=120
    )
    assert proc.stdout.split("\n")[:2] == ["[2, 2, 2, 2, 2]", "[]"], proc.stderr
    assert not any(tmp_path.iterdir())


def test_a_job_with_words_and_speakers_never_imports_torch(ov_model, model_cache, tmp_path):
    """Once the models are exported, a process that transcribes, times every word and finds the speakers imports
    neither torch, whisper nor numba (about 1.5 s before any work): mel, decoding and word timing are numpy's."""
    from pipeline.speakers.embeddings import SpeakerEncoder
    from pipeline.speakers.segmentation import Segmenter

    SpeakerEncoder(), Segmenter()  # (exported in this process first: the job below only loads them)
    code = (
        "import sys\nfrom pipeline.__main__ import main\n"
        f"print(main([{str(clip_path('en_pyannote_call'))!r}, '-o', {str(tmp_path)!r}, '--precision', 'f32',"
        " '--speakers', '2', '--format', 'json,rttm', '--quiet']))\n"
        "print(sorted(m for m in ('torch', 'whisper', 'numba', 'silero_vad') if m in sys.modules))\n"
    )
    env = {**os.environ, "SUBTITLE_CACHE_DIR": str(model_cache)}
    proc = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parents[1], capture_output=True, text=True,
                          env=env, timeout=300)  # fmt: skip
    assert proc.stdout.split("\n")[-3:-1] == ["0", "[]"], proc.stdout + proc.stderr
    data = json.loads((tmp_path / "en_pyannote_call.json").read_text())
    segments = data["segments"]
    assert len([w for s in segments for w in s["words"]]) > 40 and len({s["speaker"] for s in segments}) == 2
    # who speaks when, the same in the JSON and the RTTM: both speakers, and two at once somewhere
    rttm = [line.split() for line in (tmp_path / "en_pyannote_call.rttm").read_text().splitlines()]
    assert all(f[0] == "SPEAKER" and f[1] == "en_pyannote_call" and len(f) == 10 for f in rttm)
    turns = [(float(f[3]), round(float(f[3]) + float(f[4]), 3), f[7].replace("_", " ")) for f in rttm]
    assert turns == [(t["start"], t["end"], t["speaker"]) for t in data["speakers"]]
    assert {who for _, _, who in turns} == {s["speaker"] for s in segments}
    assert any(a[1] > b[0] and a[2] != b[2] for a, b in zip(turns, turns[1:]))


def test_not_a_media_file_is_a_clear_error(ov_model, tmp_path):
    bogus = tmp_path / "notes.mp4"
    bogus.write_text("this is not a video")
    with pytest.raises(SubtitleError, match="^notes.mp4 is not a video or audio file: use MP4"):
        subtitle_file(bogus, ov_model)


def test_ir_cache_is_reused_and_never_half_written(tmp_path, monkeypatch, ov_model):
    from test_checkpoints import tiny_en_dir

    monkeypatch.setenv("SUBTITLE_CACHE_DIR", str(tmp_path))
    # (the cache's rules, whatever the model: tiny.en exports in a fraction of base's time, which the session's own
    # IR (conftest.ov_model) exports anyway)
    real = resolve_checkpoint(tiny_en_dir())

    def interrupted():
        raise KeyboardInterrupt  # an export stopped part way, as by Ctrl-C

    with pytest.raises(KeyboardInterrupt):
        ensure_ir(Checkpoint(identity=real.identity, description=real.description, load=interrupted))
    assert [p.name for p in tmp_path.iterdir()] == [f".{real.identity}-v{EXPORT_VERSION}-f16.lock"]  # only the lock

    first = ensure_ir(real)
    stamps = {p.name: p.stat().st_mtime_ns for p in first.iterdir()}

    def must_not_load():
        raise AssertionError("the PyTorch model was loaded although the IR is cached")

    second = ensure_ir(Checkpoint(identity=real.identity, description=real.description, load=must_not_load))
    assert second == first
    assert {p.name: p.stat().st_mtime_ns for p in second.iterdir()} == stamps
    assert sorted(p.name for p in tmp_path.iterdir()) == [f".{first.name}.lock", first.name]


def test_cli_burn_and_soft_with_a_hostile_file_name(model_cache, ov_model, tmp_path):
    """`--burn --soft` write <stem>.subtitled.mp4, .subs.mkv and .subs.mp4 next to the SRT, whatever the name."""
    from conftest import speech_video

    from pipeline.media.audio import probe

    video = speech_video(ENGLISH[1], tmp_path / 'it\'s "a" [clip]: {x}, ünï 字幕.mp4')
    out = tmp_path / "out"
    proc = cli(str(video), "-o", str(out), "--burn", "--preview", "5", "--soft", "-q", "--box", "--position", "top",
               env_cache=model_cache)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    stem = video.stem
    assert sorted(p.name for p in out.iterdir()) == sorted(
        f"{stem}{suffix}" for suffix in (".srt", ".subtitled.mp4", ".subs.mkv", ".subs.mp4")
    )
    assert abs(probe(out / f"{stem}.subtitled.mp4").duration - 5.0) < 0.2


def test_word_timestamps_in_json(ov_model, audio, manifest):
    """Words come with the segments when asked for: in order, inside their segment, spelling out its text."""
    import json

    from pipeline.subtitles.write import to_format

    segments, info = transcribe(audio(ENGLISH[0]), ov_model, TranscribeOptions(language="en", word_timestamps=True))
    segments = list(segments)
    assert segments and all(s.words for s in segments)
    for s in segments:
        assert "".join(w.word for w in s.words).strip() == s.text
        assert s.start - 0.01 <= s.words[0].start and s.words[-1].end <= s.end + 0.01
        assert all(a.end <= b.start + 1e-6 and w.start <= w.end for a, b, w in zip(s.words, s.words[1:], s.words))
        assert all(0.0 <= w.probability <= 1.0 for w in s.words)
    data = json.loads(to_format("json", segments, language=info.language, duration=info.duration))
    words = [w for cue in data["segments"] for w in cue["words"]]
    assert [w["word"] for w in words] == [w.word for s in segments for w in s.words]
    assert set(words[0]) == {"start", "end", "word", "probability"}


def test_no_cues_in_long_silence_or_noise(ov_model, audio, manifest):
    """30 s of digital silence and 30 s of white noise between real utterances: every utterance is there and no
    cue reaches into either stretch by more than the 0.3 s onset tolerance."""
    from pipeline.jobs.subtitling import subtitle_audio
    from pipeline.media.audio import SAMPLE_RATE

    rng = np.random.default_rng(0)
    silence = np.zeros(30 * SAMPLE_RATE, np.float32)
    noise = (rng.standard_normal(30 * SAMPLE_RATE) * 0.05).astype(np.float32)  # about -26 dBFS
    clips = [audio(c) for c in ENGLISH[:3]]
    samples = np.concatenate([clips[0], silence, clips[1], noise, clips[2]])
    t0 = len(clips[0]) / SAMPLE_RATE
    t1 = t0 + 30 + len(clips[1]) / SAMPLE_RATE
    stretches = [(t0, t0 + 30), (t1, t1 + 30)]
    result = subtitle_audio(samples, ov_model, TranscribeOptions(language="en"))
    for start, end in stretches:
        inside = [s for s in result.cues if s.start < end - 0.3 and s.end > start + 0.3]
        assert inside == [], (start, end, inside)
    text = " ".join(s.text.replace("\n", " ") for s in result.cues)
    reference = " ".join(manifest[c]["reference_text"] for c in ENGLISH[:3])
    assert wer(reference, text) <= 0.08
