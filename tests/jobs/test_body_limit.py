"""What one request may send: the size and shape of each value, before the web framework parses and keeps it."""

from __future__ import annotations

import json

import pytest

from pipeline.jobs.body_limit import MAX_COLUMNS, MAX_CUES, MAX_VALUE_BYTES, oversized, table_within_limits

TABLES = {4: {0}, "check_cues": {0, "table"}, 2: set(), "subtitle": set()}
ROW = ["0:00:01.000", "0:00:02.000", "", "a few words"]


def table(rows):
    return {"headers": ["Start", "End", "Speaker", "Text"], "data": rows, "metadata": None}


@pytest.mark.parametrize(
    "path, body, problem",
    [
        ("/gradio_api/queue/join", {"data": [table([ROW] * 2000)], "fn_index": 4, "session_hash": "a"}, ""),
        ("/gradio_api/run/check_cues", {"data": [table([ROW] * 2000)], "session_hash": "a"}, ""),
        ("/gradio_api/call/v2/check_cues", {"table": table([ROW] * 2000)}, ""),
        ("/gradio_api/run/check_cues/", {"data": [[ROW] * 2000]}, ""),  # the rows alone
        # a table where the event has none: the form's link, kept by the session
        ("/gradio_api/queue/join", {"data": [table([ROW] * 2000)], "fn_index": 2}, "A value of the form"),
        ("/gradio_api/run/subtitle", {"data": [None, "x" * (MAX_VALUE_BYTES + 1)]}, "A value of the form"),
        ("/gradio_api/run/check_cues", {"data": [table([ROW] * 10), "x" * MAX_VALUE_BYTES]}, "A value of the form"),
        ("/gradio_api/run/check_cues", {"data": [table([ROW])], "event_data": ["x"] * 10_000}, "A value of the form"),
        # tables past the limits: short cells cost the most memory a byte
        ("/gradio_api/run/check_cues", {"data": [table([["ab"] * 20_000])]}, "The table is over"),
        ("/gradio_api/run/check_cues", {"data": [table([["ab"]] * (MAX_CUES + 1))]}, "The table is over"),
        ("/gradio_api/run/check_cues", {"data": [table([[["ab"] * 9000]])]}, "The table is over"),
        ("/gradio_api/run/check_cues", {"data": [{"headers": ["x"] * 9000, "data": []}]}, "The table is over"),
        ("/gradio_api/run/check_cues", {"data": [{"data": [], "metadata": ["x"] * 9000}]}, "The table is over"),
        ("/gradio_api/run/unknown", {"data": ["x" * (MAX_VALUE_BYTES + 1)]}, "A value of the form"),
        ("/gradio_api/run/check_cues", [table([ROW] * 2000)], "The request is over"),
    ],
)
def test_only_an_events_table_may_be_large(path, body, problem):
    found = oversized(json.dumps(body).encode(), path, TABLES)
    assert found.startswith(problem) and bool(found) == bool(problem)


def test_a_body_that_is_not_json_is_refused():
    assert oversized(b"\xff" * (MAX_VALUE_BYTES + 1), "/gradio_api/run/check_cues", TABLES).startswith("The request")


@pytest.mark.parametrize(
    "value, within",
    [
        ([[None, 1, 2.5, "x" * 1000, ""]], True),
        ([["x" * 1001]], False),
        ([[""] * (MAX_COLUMNS + 1)], False),
        ([{"a": 1}], False),
        ("rows", False),
        ({"headers": "Start", "data": []}, False),
        ({"headers": None, "data": [ROW]}, True),
    ],
)
def test_table_within_limits(value, within):
    assert table_within_limits(value) is within
