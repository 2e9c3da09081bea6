"""The speaker cost benchmark's count of multiply-adds (benchmarks/speaker_rate.py), on small models whose count is
known by hand."""

from __future__ import annotations

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest

from benchmarks.speaker_rate import multiply_adds


def _conv(shape, weights, groups=False):
    x = ops.parameter(shape, np.float32)
    w = ops.constant(np.ones(weights, np.float32))
    pads = [(weights[-1] - 1) // 2] * (len(shape) - 2)
    if groups:
        y = ops.group_convolution(x, w, [1] * len(pads), pads, pads, [1] * len(pads))
    else:
        y = ops.convolution(x, w, [1] * len(pads), pads, pads, [1] * len(pads))
    return ov.Model([y], [x])


def _matmul(left, right, transpose_a=False):
    x = ops.parameter(left, np.float32)
    return ov.Model([ops.matmul(x, ops.constant(np.ones(right, np.float32)), transpose_a, False)], [x])


def _chain():  # a 1-D convolution, then a product of its frames: both counted
    x = ops.parameter([2, 4, 10], np.float32)
    y = ops.convolution(x, ops.constant(np.ones((8, 4, 3), np.float32)), [1], [1], [1], [1])
    return ov.Model([ops.matmul(y, ops.constant(np.ones((10, 5), np.float32)), False, False)], [x])


@pytest.mark.parametrize(
    "model, expected",
    [
        # each output value takes in-channels x kernel multiply-adds: 8 x 10 outputs x 4 x 3
        (lambda: _conv([1, 4, 10], (8, 4, 3)), 960),
        # a batch of 3 counts three times
        (lambda: _conv([3, 4, 10], (8, 4, 3)), 2880),
        # 2-D: 16 x 5 x 5 outputs x 2 x 3 x 3
        (lambda: _conv([1, 2, 5, 5], (16, 2, 3, 3)), 7200),
        # grouped, 4 groups of 2 in and 3 out: 12 x 10 outputs x 2 x 3 (not the 8 in-channels)
        (lambda: _conv([1, 8, 10], (4, 3, 2, 3), groups=True), 720),
        # (2, 5) @ (5, 3): 6 outputs x 5
        (lambda: _matmul([2, 5], (5, 3)), 30),
        # transposed left side, (5, 2)^T @ (5, 3): the shared side is the left's first
        (lambda: _matmul([5, 2], (5, 3), transpose_a=True), 30),
        # a batch of products, (4, 2, 5) @ (5, 3)
        (lambda: _matmul([4, 2, 5], (5, 3)), 120),
        # both kinds in one model: 2 x 960, then (2, 8, 10) @ (10, 5) = 80 x 10
        (_chain, 2 * 960 + 800),
        # nothing else counts: an addition
        (lambda: ov.Model([ops.add(p := ops.parameter([4, 4], np.float32), p)], [p]), 0),
    ],
)
def test_multiply_adds(model, expected):
    assert multiply_adds(model()) == expected
