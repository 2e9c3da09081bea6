"""segmentation-3.0 exported to OpenVINO IR (convert/segmentation.py, convert/pyannet.py) hears a real call as
the PyTorch model does."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import clip_path


@pytest.mark.slow
def test_the_ir_gives_the_pytorch_models_speakers():
    import openvino as ov
    import torch

    from convert.pyannet import load_segmentation
    from convert.segmentation import CHUNK, WEIGHTS, ensure_segmentation_ir
    from pipeline.media.audio import load_audio

    audio = load_audio(clip_path("en_pyannote_call"))
    chunks = np.stack([audio[:CHUNK], audio[CHUNK : 2 * CHUNK]])[:, None].astype(np.float32)
    with torch.no_grad():
        expected = load_segmentation(WEIGHTS)(torch.from_numpy(chunks)).numpy()
    compiled = ov.Core().compile_model(ensure_segmentation_ir() / "segmentation.xml", "CPU",
                                       {"INFERENCE_PRECISION_HINT": "f32"})  # fmt: skip
    got = compiled(chunks)[0]
    assert got.shape == expected.shape == (2, 589, 7)
    assert np.abs(got - expected).max() < 1e-3
    classes = expected.argmax(axis=-1)
    assert (got.argmax(axis=-1) == classes).all()
    assert len({1, 2, 3} & set(classes.ravel().tolist())) >= 2  # (the call's two women: two of its speakers)
