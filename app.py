"""Web app: upload a video, get subtitles (SRT to download) and the video playing with them.

    python app.py [--host 127.0.0.1] [--port 7860] [--model base] [--share]

The UI knows nothing about models or ffmpeg: `build_ui(run)` wraps a plain function, `run`, which calls pipeline/.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import gradio as gr

from pipeline import ModelOptions, SubtitleError, TranscribeOptions, load_model, subtitle_file, write_outputs
from pipeline.transcribe import normalize_language

JOBS_DIR = Path(tempfile.gettempdir()) / "subtitle-generator-jobs"
JOB_MAX_AGE = 3600  # seconds: finished jobs' files are served this long, then removed


class Subtitler:
    """Loads the model once (on first use) and runs one job per call."""

    def __init__(self, model: str = "base"):
        self._options = ModelOptions(model=model)
        self._model = None
        self._lock = threading.Lock()

    def model(self):
        with self._lock:
            if self._model is None:
                self._model = load_model(self._options)
            return self._model

    def __call__(
        self, video: str | None, language: str, task: str, progress: Callable[[float, str], None]
    ) -> tuple[Path, Path, Path]:
        """Returns (srt, vtt, video) for one uploaded file."""
        if not video:
            raise SubtitleError("Upload a video or audio file first")
        _remove_old_jobs()
        progress(0.0, "Preparing the model")
        model = self.model()
        options = TranscribeOptions(language=normalize_language(language), task=task)
        job = Path(tempfile.mkdtemp(prefix="job-", dir=_jobs_dir()))
        try:
            result = subtitle_file(Path(video), model, options, progress=lambda done: progress(done, "Transcribing"))
            stem = Path(video).stem or "subtitles"
            srt_path, vtt_path = write_outputs(result, ["srt", "vtt"], job, stem)
        except BaseException:
            shutil.rmtree(job, ignore_errors=True)
            raise
        return srt_path, vtt_path, Path(video)


def build_ui(run: Callable[..., tuple[Path, Path, Path]]) -> gr.Blocks:
    with gr.Blocks(title="Subtitle generator", delete_cache=(JOB_MAX_AGE, JOB_MAX_AGE)) as demo:
        gr.Markdown("# Subtitle generator\nUpload a video: get an SRT file and a preview with the subtitles.")
        with gr.Row():
            with gr.Column():
                video_in = gr.Video(label="Video", sources=["upload"])
                language = gr.Dropdown(["auto", *sorted(_language_names())], value="auto", label="Spoken language")
                task = gr.Radio(["transcribe", "translate"], value="transcribe", label="Task (translate gives English)")
                button = gr.Button("Generate subtitles", variant="primary")
            with gr.Column():
                video_out = gr.Video(label="Preview with subtitles", interactive=False)
                srt_out = gr.File(label="Subtitles (.srt)")

        def generate(video, language, task, progress=gr.Progress()):
            try:
                srt_path, vtt_path, source = run(video, language, task, lambda done, what: progress(done, desc=what))
            except SubtitleError as e:
                raise gr.Error(str(e)) from None
            return gr.Video(value=str(source), subtitles=str(vtt_path)), str(srt_path)

        button.click(generate, [video_in, language, task], [video_out, srt_out], api_name="subtitle")
    return demo


def _language_names() -> list[str]:
    from whisper.tokenizer import LANGUAGES

    return [name.title() for name in LANGUAGES.values()]


def _jobs_dir() -> Path:
    JOBS_DIR.mkdir(parents=True, exist_ok=True)
    return JOBS_DIR


def _remove_old_jobs() -> None:
    now = time.time()
    for job in _jobs_dir().glob("job-*"):
        if now - job.stat().st_mtime > JOB_MAX_AGE:
            shutil.rmtree(job, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description="Subtitle generator web app (Gradio).")
    p.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"), help="address to listen on")
    p.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")), help="port")
    p.add_argument("--model", default="base", help="model name, .pt file or faster-whisper directory")
    p.add_argument("--share", action="store_true", help="create a public gradio.live link (off by default)")
    args = p.parse_args()
    subtitler = Subtitler(args.model)
    threading.Thread(target=subtitler.model, daemon=True).start()  # export/compile while the page loads
    build_ui(subtitler).queue(default_concurrency_limit=1).launch(
        server_name=args.host, server_port=args.port, share=args.share
    )


if __name__ == "__main__":
    main()
