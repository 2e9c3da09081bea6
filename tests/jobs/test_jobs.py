"""One job path: the JobSpec and the options that check themselves, the CLI and the page building equal specs, and
run_job's behaviour that both rely on (a bad input fails alone, same-stem inputs, links, existing subtitles)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import srt
from conftest import ENGLISH, clip_path, wer

from pipeline.asr.cache import ModelCache
from pipeline.asr.options import TranscribeOptions
from pipeline.asr.results import TranscriptionInfo
from pipeline.errors import OptionError, SubtitleError
from pipeline.jobs.run import cut_short, run_job
from pipeline.jobs.spec import FileFailed, FileWritten, JobResult, JobSpec, Policy, SubtitleResult
from pipeline.media.audio import Limits, MediaInfo
from pipeline.media.video import BurnOptions, Style

CLIP = Path("clip.mp4")
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "build, option, message",
    [
        (lambda: JobSpec(inputs=()), "inputs", "Upload a video or audio file, or paste a link, first"),
        (lambda: JobSpec(inputs=(CLIP,), formats=("srt", "docx")), "formats", "Unknown format 'docx': use srt, vtt, txt, json, ass or rttm"),
        (lambda: JobSpec(inputs=[CLIP]), "inputs", "Upload a video or audio file, or paste a link, first"),
        (lambda: JobSpec(inputs=(CLIP,), formats=("srt", "srt")), "formats", "Choose each output format once, at least one: srt, vtt, txt, json, ass, rttm"),
        (lambda: JobSpec(inputs=(CLIP,), formats=()), "formats", "Choose each output format once, at least one: srt, vtt, txt, json, ass, rttm"),
        (lambda: JobSpec(inputs=(CLIP,), formats=("rttm",)), "formats", "An RTTM file says who speaks when: set Speakers to auto or a number too"),
        (lambda: JobSpec(inputs=(CLIP, CLIP), subtitles=Path("a.srt")), "subtitles", "Existing subtitles go with exactly one video"),
        (lambda: TranscribeOptions(language="klingon"), "language", "Unknown language 'klingon': use 'auto' or a code such as en, de, es, fr, zh"),
        (lambda: TranscribeOptions(task="summarize"), "task", "Unknown task 'summarize': use transcribe or translate"),
        (lambda: TranscribeOptions(beam_size=0), "beam_size", "The beam size is 1 (greedy) or more"),
        (lambda: TranscribeOptions(vad_threshold=2), "vad_threshold", "The speech threshold is a probability: a number between 0 and 1"),
        (lambda: TranscribeOptions(batch_size=0), "batch_size", "The batch size must be between 1 and 32"),
        (lambda: Style(position="middle"), "position", "Unknown position 'middle': use bottom or top"),
        (lambda: Style(text_colour="white"), "text_colour", "Colour 'white' is not valid: use #RRGGBB, e.g. #FFFFFF"),
        (lambda: Style(outline_colour="#12345"), "outline_colour", "Colour '#12345' is not valid: use #RRGGBB, e.g. #FFFFFF"),
        (lambda: Style(font_size=0), "font_size", "The text size is a fraction of the picture's shorter side: 0 to 0.5"),
        (lambda: Style(margin=0.9), "margin", "The margin is a fraction of the picture's height: 0 to 0.5"),
        (lambda: BurnOptions(preview_seconds=0), "preview_seconds", "The preview length must be a positive number of seconds"),
    ],
)  # fmt: skip
def test_every_bad_option_fails_where_it_is_built_with_one_message(build, option, message):
    with pytest.raises(OptionError) as raised:
        build()
    assert (raised.value.option, str(raised.value)) == (option, message)


@pytest.mark.parametrize(
    "given, means",
    [
        (TranscribeOptions(language="English"), TranscribeOptions(language="en")),
        (TranscribeOptions(language="auto"), TranscribeOptions(language=None)),
        (TranscribeOptions(beam_size=1), TranscribeOptions(beam_size=None)),
    ],
)  # fmt: skip
def test_options_are_normalised_where_they_are_built(given, means):
    assert given == means


@pytest.mark.parametrize(
    "spec, words",
    [
        (JobSpec(inputs=(CLIP,)), False),
        (JobSpec(inputs=(CLIP,), formats=("json",)), True),  # JSON carries every word's timing
        (JobSpec(inputs=(CLIP,), style=Style(highlight_words=True)), True),  # lit-up words need their own times
        (JobSpec(inputs=(CLIP,), transcribe=TranscribeOptions(word_timestamps=True)), True),
    ],
)
def test_a_job_decodes_word_times_when_an_output_needs_them_without_rewriting_itself(spec, words):
    assert spec.decoding.word_timestamps is words
    assert spec.transcribe == TranscribeOptions(word_timestamps=spec.transcribe.word_timestamps)


@pytest.mark.parametrize(
    "argv, form",
    [
        ([], {}),
        (["-l", "de", "--task", "translate", "--beam-size", "1", "-f", "srt,json"],
         {"language": "de", "task": "translate", "beam_size": 1, "formats": ["srt", "json"]}),
        (["--burn", "--preview", "60", "--font-size", "7", "--position", "top", "--text-colour", "#FFFF00",
          "--box", "--margin", "10", "--soft"],
         {"burn_in": "preview", "font_size": 7, "position": "top", "text_colour": "#FFFF00", "box": True, "margin": 10,
          "soft": True}),
        (["--no-vad", "--batch-size", "4", "--max-line-chars", "37", "--max-cps", "17", "--precision", "f32"],
         {"vad": False, "batch_size": 4, "max_line_chars": 37, "max_cps": 17, "precision": "f32"}),
        (["--no-cue-rules", "--initial-prompt", "OpenVINO", "--no-condition-on-previous-text"],
         {"cue_rules": False, "initial_prompt": "OpenVINO", "condition_on_previous_text": False}),
        (["--speakers", "auto", "--speaker-labels", "names"], {"speakers": "auto", "speaker_labels": "names"}),
        (["--speakers", "3", "--speaker-labels", "none", "--burn", "--speaker-colours"],
         {"speakers": "3", "speaker_labels": "none", "burn_in": "full", "speaker_colours": True}),
        (["--speakers", "off"], {"speakers": "off"}),
        (["-f", "ass,vtt", "--highlight-words", "--highlight-colour", "#00FF80", "--position", "top"],
         {"formats": ["ass", "vtt"], "highlight_words": True, "highlight_colour": "#00FF80", "position": "top"}),
    ],
)  # fmt: skip
def test_the_page_and_the_cli_build_the_same_job(argv, form):
    """form_to_spec (the page, no Gradio involved) and the CLI's parse of the same choices give equal JobSpecs."""
    from app import form_to_spec
    from pipeline.__main__ import build_spec, parse_args

    # (but for resuming: the CLI skips inputs done before, the page's jobs write into a fresh folder; and the page
    # plays a preview, which the CLI does not make)
    cli_spec = build_spec(parse_args([str(CLIP), *argv]))
    assert not cli_spec.overwrite and not cli_spec.preview
    assert form_to_spec(files=[str(CLIP)], **form) == replace(cli_spec, overwrite=True, preview=True)


@pytest.mark.parametrize(
    ("stated", "heard", "note"),
    [
        (4.0, 0.49, "call.mp4: its sound ends at 0:00 of the 0:04 the file says it lasts (a recording or download cut short?)"),
        (600.0, 300.0, "call.mp4: its sound ends at 5:00 of the 10:00 the file says it lasts"),
        (600.0, 590.0, None),  # (audio a little shorter than the picture: as most videos are)
        (10.0, 8.5, None),  # (under 2 s short)
        (None, 3.0, None),  # (the file states no length: nothing to compare)
        (4.0, 4.1, None),
    ],
)  # fmt: skip
def test_a_file_whose_sound_ends_early_gets_a_note(stated, heard, note):
    info = TranscriptionInfo(language="en", language_probability=1.0, duration=heard, task="transcribe")
    said = cut_short("call.mp4", SubtitleResult((), info, MediaInfo(stated, True, True)))
    assert said == note if note is None else said.startswith(note)


def test_too_many_inputs_and_unknown_models_fail_before_any_event(tmp_path):
    models = ModelCache()
    with pytest.raises(SubtitleError, match=r"^3 files is too many for one job; this server takes up to 2$"):
        next(run_job(JobSpec(inputs=(CLIP,) * 3), tmp_path / "out", models, Policy(limits=Limits(max_files=2))))
    with pytest.raises(OptionError, match=r"^Unknown model 'small': choose one of the list$"):
        next(
            run_job(
                JobSpec(inputs=(CLIP,), model=replace_model("small")),
                tmp_path / "out",
                models,
                Policy(models=("base",)),
            )
        )
    assert not models.is_loaded("base") and not (tmp_path / "out").exists()


def replace_model(name: str):
    from pipeline.asr.options import ModelOptions

    return ModelOptions(model=name)


def run(spec: JobSpec, out: Path, models: ModelCache, policy: Policy = Policy()) -> tuple[list, JobResult]:
    events = list(run_job(spec, out, models, policy))
    assert isinstance(events[-1], JobResult)
    return events[:-1], events[-1]


@pytest.mark.slow
def test_a_bad_input_fails_alone_and_same_stems_get_their_own_files(ov_model, videos, manifest, tmp_path):
    """Two inputs named alike in different folders and one that is not media: two sets of files with distinct
    names, one FileFailed with its message, nothing of the bad input left, and normal file permissions."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    shutil.copy(videos[ENGLISH[0]], a / "talk.mp4")
    shutil.copy(videos[ENGLISH[1]], b / "talk.mp4")
    (tmp_path / "notes.mp4").write_text("not a video")
    models = ModelCache(loaded={("base", "f32"): ov_model})
    spec = JobSpec(
        inputs=(a / "talk.mp4", tmp_path / "notes.mp4", b / "talk.mp4"),
        model=replace_model_f32(),
        formats=("srt", "txt"),
    )
    out = tmp_path / "out"
    old = os.umask(0o022)
    try:
        events, result = run(spec, out, models)
    finally:
        os.umask(old)
    failed = [e for e in events if isinstance(e, FileFailed)]
    assert [(f.index, f.name) for f in failed] == [(1, "notes.mp4")]
    assert failed[0].message.startswith("notes.mp4 is not a video or audio file")
    assert sorted(p.name for p in out.iterdir()) == ["talk (2).srt", "talk (2).txt", "talk.srt", "talk.txt"]
    assert [e.path.name for e in events if isinstance(e, FileWritten)] == ["talk.srt", "talk.txt", "talk (2).srt",
                                                                          "talk (2).txt"]  # fmt: skip
    for clip, name in ((ENGLISH[0], "talk.srt"), (ENGLISH[1], "talk (2).srt")):
        text = " ".join(c.content for c in srt.parse((out / name).read_text(encoding="utf-8")))
        assert wer(manifest[clip]["reference_text"], text) <= 0.10
        assert (out / name).stat().st_mode & 0o777 == 0o644
    assert [f.source.name for f in result.files] == ["talk.mp4", "talk.mp4"] and result.failed == tuple(failed)


def replace_model_f32():
    from pipeline.asr.options import ModelOptions

    return ModelOptions(model="base", precision="f32")


def cli(*args: str, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SUBTITLE_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, "-m", "pipeline", *args], capture_output=True, text=True, env=env,
                          timeout=900, cwd=ROOT)  # fmt: skip


@pytest.mark.slow
def test_cli_takes_links_and_a_bad_input_fails_alone(media_server, model_cache, manifest, tmp_path):
    out = tmp_path / "out"
    proc = cli(f"{media_server}/{ENGLISH[1]}.mp4", str(tmp_path / "missing.mp4"), "-o", str(out), "-q",
               cache=model_cache)  # fmt: skip
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "missing.mp4 does not exist" in lines[0]
    assert [p.name for p in out.iterdir()] == [f"{ENGLISH[1]}.srt"]  # named for the link's title
    text = " ".join(c.content for c in srt.parse((out / f"{ENGLISH[1]}.srt").read_text(encoding="utf-8")))
    assert wer(manifest[ENGLISH[1]]["reference_text"], text) <= 0.10


def test_import_of_the_render_module_keeps_its_functions():
    """pipeline/__init__ once re-exported subtitles.render under the name of the module pipeline.media.video."""
    code = "import pipeline.media.video, pipeline; print(pipeline.media.video.burn.__name__, pipeline.media.video.mux_soft.__name__)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert proc.stdout.split() == ["burn", "mux_soft"]


@pytest.mark.slow
def test_cli_burns_and_muxes_existing_subtitles_without_transcribing(tmp_path):
    """--subtitles FILE: the cues come from the file, nobody transcribes (no model cache is even made), and the
    burned frame reads back the file's text."""
    from conftest import speech_video
    from test_video import TESSERACT, frame, ocr, words

    from pipeline.media.audio import probe

    video = speech_video(ENGLISH[0], tmp_path / "clip.mp4")
    given = tmp_path / "fixed.vtt"
    given.write_text("WEBVTT\n\n00:00.500 --> 00:04.000\nHELLO EDITED WORLD\n", encoding="utf-8")
    out, cache = tmp_path / "out", tmp_path / "cache"
    proc = cli(str(video), "--subtitles", str(given), "--burn", "--soft", "-f", "srt,vtt", "-o", str(out), "-q",
               cache=cache)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["clip.srt", "clip.subs.mkv", "clip.subs.mp4",
                                                     "clip.subtitled.mp4", "clip.vtt"]  # fmt: skip
    assert (out / "clip.srt").read_text(encoding="utf-8") == "1\n00:00:00,500 --> 00:00:04,000\nHELLO EDITED WORLD\n"
    assert not cache.exists()  # no model was looked up, let alone exported
    assert probe(out / "clip.subs.mkv").duration == pytest.approx(probe(video).duration, abs=0.1)
    if TESSERACT is not None:
        assert {"hello", "edited", "world"} <= words(ocr(frame(out / "clip.subtitled.mp4", 2.0), tmp_path))


def test_unreadable_subtitles_are_a_message(tmp_path):
    given = tmp_path / "notes.srt"
    given.write_text("just some text\n", encoding="utf-8")
    video = clip_path(ENGLISH[0])
    proc = cli(str(video), "--subtitles", str(given), "-o", str(tmp_path / "out"), cache=tmp_path / "cache")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["error: No cues found: the subtitles must be an SRT or WebVTT file"]


@pytest.mark.slow
def test_cli_subtitles_a_folder_and_a_second_run_resumes(model_cache, manifest, tmp_path):
    folder_and_resume(model_cache, manifest, tmp_path)  # (and on Ray: test_ray.py)


def folder_and_resume(model_cache, manifest, tmp_path, ray: tuple[str, ...] = (), *, resume: bool = True) -> None:
    """A folder is its media files, recursively; a broken one fails alone (exit 2) and the summary gives its reason.
    Run again after deleting one output (`resume`): only that input is transcribed, the others are skipped. `ray`:
    the CLI's options to run it on a cluster."""
    archive = tmp_path / "archive"
    (archive / "day2").mkdir(parents=True)
    shutil.copy(clip_path(ENGLISH[0]), archive / f"{ENGLISH[0]}.wav")
    shutil.copy(clip_path(ENGLISH[1]), archive / "day2" / f"{ENGLISH[1]}.wav")
    (archive / "day2" / "broken.mp4").write_bytes(b"not a video")
    (archive / "notes.txt").write_text("not media either")
    out = tmp_path / "out"
    first = cli(str(archive), "-o", str(out), *ray, cache=model_cache)
    assert first.returncode == 2, first.stderr
    assert first.stderr.strip().splitlines()[-2:] == [
        "2 done (0.01 h of audio), 0 skipped (done before), 1 failed",
        "  failed: broken.mp4: broken.mp4 is not a video or audio file: use MP4, MKV, WebM, MOV, MP3, WAV, …",
    ]
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{c}.srt" for c in ENGLISH[:2])
    if not resume:
        return
    kept = (out / f"{ENGLISH[0]}.srt").stat().st_mtime_ns
    (out / f"{ENGLISH[1]}.srt").unlink()

    again = cli(str(archive), "-o", str(out), *ray, cache=model_cache)
    assert again.returncode == 2
    assert f"{ENGLISH[0]}.wav: skipped, its outputs are there from an earlier run (--overwrite to redo)" in again.stderr
    assert "1 done (0.00 h of audio), 1 skipped (done before), 1 failed" in again.stderr
    assert (out / f"{ENGLISH[0]}.srt").stat().st_mtime_ns == kept  # not written again
    text = " ".join(c.content for c in srt.parse((out / f"{ENGLISH[1]}.srt").read_text(encoding="utf-8")))
    assert wer(manifest[ENGLISH[1]]["reference_text"], text) <= 0.10


def test_a_video_that_cannot_be_made_is_a_note_and_the_subtitles_are_delivered(tmp_path, monkeypatch):
    """The videos are extras: a burn stopped as too slow to draw gives the subtitles, a one-line note, and no
    video (issue 50, item 2: a failed preview once failed the whole job)."""
    from conftest import ffmpeg, slow_ass

    from pipeline.media import video

    monkeypatch.setattr(video, "GRACE", 2.0)
    clip = tmp_path / "clip.mp4"
    ffmpeg("-f", "lavfi", "-i", "testsrc2=s=640x360:d=20", "-f", "lavfi", "-i", "sine=d=20", "-shortest",
           "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", str(clip))  # fmt: skip
    script = tmp_path / "slow.ass"
    script.write_text(slow_ass(), encoding="utf-8")
    spec = JobSpec(inputs=(clip,), formats=("srt",), subtitles=script, burn=BurnOptions())
    result = next(e for e in run_job(spec, tmp_path / "out", ModelCache()) if isinstance(e, JobResult))
    done = result.files[0]
    assert not result.failed and done.burned is None
    assert [p.name for p in done.outputs] == ["clip.srt"] and "Slow" in done.outputs[0].read_text()
    assert len(done.notes) == 1 and done.notes[0].startswith("No burned-in video: Burning in was too slow (")
    assert done.notes[0].endswith("The subtitles are ready.")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["clip.srt"]
