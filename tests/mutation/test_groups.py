"""Every path the mutation runner names exists: the modules each group mutates, the test
files it runs against them, and the tests it leaves out as flaky (a path that a move left
behind would make ``make mutate`` run fewer tests, or none, without saying so)."""

from __future__ import annotations

import pytest

from tests.mutation.run import FLAKY, GROUPS, MIDDLEWARE_TESTS, ROOT


@pytest.mark.parametrize("group", GROUPS, ids=lambda group: group.name)
def test_a_group_names_modules_and_tests_that_exist(group) -> None:
    missing = [m for m in group.modules if not (ROOT / m).is_file()]
    missing += [t for t in group.tests if not (ROOT / t).is_file()]
    assert missing == []


def test_the_shared_and_flaky_tests_exist() -> None:
    assert [t for t in MIDDLEWARE_TESTS if not (ROOT / t).is_file()] == []
    for test in FLAKY:
        path, name = test.split("::")
        assert f"def {name}(" in (ROOT / path).read_text(encoding="utf-8"), test
