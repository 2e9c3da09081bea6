"""pipeline/tuning.py names the tests that pin each tuned value: every value has some, and every one exists."""

import re
from pathlib import Path

from pipeline import tuning

ROOT = Path(__file__).parent.parent


def test_every_tuned_value_names_tests_that_exist():
    values = {name for name in vars(tuning) if re.fullmatch(r"[A-Z][A-Z0-9_]*", name) and name != "PINNED_BY"}
    assert set(tuning.PINNED_BY) == values
    for name, tests in tuning.PINNED_BY.items():
        assert tests, name
        for test in tests:
            path, function = test.split("::")
            assert re.search(rf"^def {function}\(", (ROOT / path).read_text(), re.M), f"{name}: {test}"
