"""How many examples a property test draws: the number the suite runs (``bin/test``, CI),
times ``PYJOYNR_SOAK`` (a whole number, 1 when unset) for a soak run that draws more of them,
e.g. ``PYJOYNR_SOAK=3 .venv/bin/python -m pytest tests/unit/test_gcd_index.py``.

For the property tests whose every example is costly (a stateful machine of many steps, a
scenario on a real database), which set their own ``max_examples``; the others follow the
Hypothesis profile of tests/conftest.py."""

from __future__ import annotations

import os

__all__ = ["SOAK", "examples"]


def _soak() -> int:
    text = os.environ.get("PYJOYNR_SOAK", "").strip() or "1"
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"PYJOYNR_SOAK must be a whole number of at least 1, got {text!r}")
    return int(text)


#: the factor on the suite's numbers of examples (PYJOYNR_SOAK; 1 when unset)
SOAK = _soak()


def examples(suite: int) -> int:
    """``suite`` examples, times the soak factor."""
    return suite * SOAK
