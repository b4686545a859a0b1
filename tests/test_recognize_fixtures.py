"""Every golden case passes in-process (fixtures name their sources)."""

from __future__ import annotations

import pytest
from recognize_fixtures import Case, as_multiset, load_cases

from sharp_cer.errors import RecognizeError
from sharp_cer.recognize import match_recognize

CASES = load_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(case: Case) -> None:
    if case.error is not None:
        with pytest.raises(RecognizeError) as caught:
            match_recognize(case.table(), case.clause)
        assert case.error in str(caught.value)
        return
    out = match_recognize(case.table(), case.clause)
    if case.layout is not None:
        assert out.column_names == case.layout
    got = [[row[name] for name in case.select] for row in out.to_pylist()]
    assert as_multiset(got) == as_multiset(case.expected or [])


def test_fixtures_name_their_sources() -> None:
    assert CASES and all(case.source for case in CASES)
