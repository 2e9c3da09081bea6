"""Models loaded once and shared: `load_model` (checkpoint, IR export on first use, compile) and `ModelCache`, which
keeps the recently used ones for every job; compiled blobs on disk per CPU, precision and thread count."""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import replace
from typing import TYPE_CHECKING

from pipeline import timings
from pipeline.asr.options import ModelOptions
from pipeline.asr.precision import resolve_precision
from pipeline.cpu import cpu

if TYPE_CHECKING:
    from pipeline.asr.model import OVWhisper
from pipeline.errors import Cancelled
from pipeline.timings import timed

log = logging.getLogger("subtitle-generator")


@timed("model load")
def load_model(options: ModelOptions = ModelOptions(), progress=lambda message: None) -> OVWhisper:
    """Resolve the checkpoint, export it to IR on first use (cached), and compile it."""
    # imported here: convert/ imports pipeline.errors, so a module-level import would be circular; and the engine
    # only when a model loads, not for a job that fails before it
    from convert.checkpoints import resolve_checkpoint
    from convert.export import ensure_ir
    from convert.ir_layout import ExportOptions
    from pipeline.asr.compiled import compiled_cache_dir
    from pipeline.asr.measured import measured_precision
    from pipeline.asr.memory import map_large_buffers
    from pipeline.asr.model import OVWhisper

    map_large_buffers()
    precision = resolve_precision(options.precision)
    checkpoint = resolve_checkpoint(options.model)
    ir_dir = ensure_ir(checkpoint, ExportOptions(weights=precision.weights), progress)
    threads = options.threads or cpu().cores
    choice = None
    if precision.measured:  # the encoder's setting: the fastest on this CPU, measured on first use
        precision, choice = measured_precision(ir_dir, precision, threads=threads, progress=progress)
    progress(f"Loading {checkpoint.description} ({precision.name})")
    model = OVWhisper(ir_dir, precision, threads, compiled_cache_dir(precision, threads))
    model.choice = choice
    timings.note("precision", f"{precision.name}, " + (choice.describe() if choice else f"encoder {precision.encoder}"))
    return model


class ModelCache:
    """Models compiled once and shared by every job (the web app's users), by model and precision. Thread-safe: a
    model is loaded by the first job that asks for it while jobs on models already loaded go on; compiled models
    serve concurrent jobs."""

    def __init__(
        self,
        options: ModelOptions = ModelOptions(),
        loaded: dict[tuple[str, str], OVWhisper] | None = None,
        keep: int = 2,
    ):
        self.options = options  # threads; the model and precision come with each request
        self.keep = keep  # models held at once; the least recently used goes (jobs using it keep their reference)
        self._models: OrderedDict[tuple[str, str], OVWhisper] = OrderedDict(loaded or {})  # (model, precision)
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._guard = threading.Lock()

    def is_loaded(self, model: str, precision: str = "auto") -> bool:
        return self._key(model, precision) in self._models

    def get(
        self, model: str, progress=lambda message: None, *, precision: str = "auto", stop: threading.Event | None = None
    ) -> OVWhisper:
        """The compiled model, loaded (and exported first, if it is not cached) on first use. With `stop`, a load
        runs in a thread of its own and the caller gets Cancelled as soon as `stop` is set; the load itself goes on
        to its end and the model is cached (one load per model at a time, so cancelled jobs cannot stack them)."""
        if stop is not None and not self.is_loaded(model, precision):
            loading: Future = Future()

            def load() -> None:
                try:
                    loading.set_result(
                        self.get(model, lambda m: None if stop.is_set() else progress(m), precision=precision)
                    )
                except BaseException as e:
                    loading.set_exception(e)

            threading.Thread(target=load, name=f"load-{model}", daemon=True).start()
            while True:
                try:
                    return loading.result(timeout=0.2)
                except TimeoutError:
                    if stop.is_set():
                        raise Cancelled from None
        key = self._key(model, precision)
        with self._guard:
            if key in self._models:
                self._models.move_to_end(key)
                return self._models[key]
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:  # one load per model; jobs on other models go on meanwhile
            with self._guard:
                if key in self._models:  # loaded by another job while this one waited
                    return self._models[key]
            started = time.monotonic()
            log.info("loading model %s at %s (compiled once; exported first if it is not cached)", model, key[1])
            loaded = load_model(replace(self.options, model=model, precision=key[1]), progress)
            log.info("model %s at %s ready in %.1f s", model, key[1], time.monotonic() - started)
            with self._guard:
                self._models[key] = loaded
                while len(self._models) > self.keep:
                    self._models.popitem(last=False)
            return loaded

    @staticmethod
    def _key(model: str, precision: str) -> tuple[str, str]:
        return model, resolve_precision(precision).name  # "auto" is what it means on this CPU
