"""whisper's tokenizer (tiktoken's BPE with Whisper's special tokens) without importing the whisper package, whose
__init__ imports torch: whisper/tokenizer.py needs only tiktoken, so it is loaded from its own file, unchanged."""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

_NAME = "pipeline.asr._whisper_tokenizer"


@functools.cache
def _module() -> ModuleType:
    """whisper/tokenizer.py as a module of its own (find_spec of a top-level package does not run its __init__)."""
    package = importlib.util.find_spec("whisper")
    if package is None or not package.submodule_search_locations:
        raise ImportError("openai-whisper is not installed: pip install -r requirements.txt")
    spec = importlib.util.spec_from_file_location(_NAME, Path(package.submodule_search_locations[0]) / "tokenizer.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[_NAME] = module  # (as importlib's recipe does: dataclasses look their module up there)
    spec.loader.exec_module(module)
    return module


def get_tokenizer(multilingual: bool, *, num_languages: int = 99, language: str | None = None, task: str | None = None):
    """whisper.tokenizer.get_tokenizer: the cached Tokenizer for a model and, when given, a language and task."""
    return _module().get_tokenizer(multilingual, num_languages=num_languages, language=language, task=task)
