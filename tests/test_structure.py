"""The package's shape (issue 48): folders are the map, no module too long to read, no import circle (pipeline/ and
convert/), no Gradio in pipeline/. Read from the source with `ast`, imports inside functions included."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pipeline"
MAX_LINES = 450
MAX_TOP_MODULES = 8


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """The modules of ours that `path` imports (a `from package import name` counts the submodule when it is one)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return found


MODULES = {_module(p): p for p in sorted([*PACKAGE.rglob("*.py"), *(ROOT / "convert").rglob("*.py")])}
GRAPH = {m: sorted(i for i in _imports(p) if i in MODULES and i != m) for m, p in MODULES.items()}


def _cycle(graph: dict[str, list[str]]) -> list[str] | None:
    """One import circle of `graph`, as the modules around it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in graph.get(m, []):
            if state.get(n) == 1:
                return path[path.index(n) :] + [n]
            if n not in state and (found := visit(n)):
                return found
        state[m] = 2
        path.pop()
        return None

    for m in graph:
        if m not in state and (found := visit(m)):
            return found
    return None


@pytest.mark.parametrize(
    "graph, circle",
    [
        ({"a": ["b"], "b": []}, None),
        ({"a": ["b"], "b": ["a"]}, ["a", "b", "a"]),
        ({"a": ["b"], "b": ["c"], "c": ["a"]}, ["a", "b", "c", "a"]),
        ({"a": ["a"]}, ["a", "a"]),
    ],
)
def test_the_circle_finder_finds_circles(graph, circle):
    assert _cycle(graph) == circle


def test_no_import_circle_between_modules():
    assert _cycle(GRAPH) is None


def test_pipeline_has_few_top_level_modules_and_the_rest_in_subpackages():
    top = [p.name for p in PACKAGE.glob("*.py")]
    assert len(top) <= MAX_TOP_MODULES, top
    assert {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()} >= {
        "asr",
        "speakers",
        "subtitles",
        "media",
        "jobs",
    }


def test_no_module_is_longer_than_one_sitting():
    long = {str(p.relative_to(ROOT)): n for p in [*MODULES.values(), ROOT / "app.py"]
            if (n := len(p.read_text().splitlines())) > MAX_LINES}  # fmt: skip
    assert long == {}


def test_pipeline_never_imports_gradio():
    assert [
        m
        for m, p in MODULES.items()
        if m.startswith("pipeline") and any(i.split(".")[0] == "gradio" for i in _imports(p))
    ] == []


@pytest.mark.parametrize(
    "module",
    ["app", "pipeline.__main__", "pipeline.jobs.run", "convert.export", "convert.checkpoints", "convert.speaker"],
)
def test_the_front_ends_start_without_the_engine(module):
    """torch, whisper and OpenVINO (2 s to import) come with the first model load, not with the page's or the CLI's
    start: `import pipeline.X` of a light module must stay light (pipeline/__init__.py's lazy names)."""
    import subprocess
    import sys

    code = f"import sys, {module}\nprint(sorted(m for m in ('torch', 'whisper', 'openvino') if m in sys.modules))"
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[-2] == "[]"
