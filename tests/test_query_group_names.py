"""The 0.1 name of a query group, ``Group``, still imports for one release, with a warning."""

from __future__ import annotations

import pytest

import sharp_cer.planner
import sharp_cer.planner.plan
from sharp_cer.planner import QueryGroup


@pytest.mark.parametrize("module", [sharp_cer.planner, sharp_cer.planner.plan])
def test_the_old_name_of_a_query_group_warns_and_is_the_new_class(module: object) -> None:
    with pytest.warns(DeprecationWarning, match="plan.Group is sharp_cer.planner.plan.QueryGroup since"):
        old = module.Group  # type: ignore[attr-defined]
    assert old is QueryGroup


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="Groupp"):
        _ = sharp_cer.planner.Groupp  # type: ignore[attr-defined]
