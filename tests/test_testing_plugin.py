"""The pytest plugin (pyjoynr.testing.plugin): the example of docs/testing.md, run by pytest in
a folder of its own (none of this suite's conftest applies there, the plugin comes through its
entry point), passes; and with ``joynr_gcd`` overridden by ``joynr_postgres_gcd``, the two hosts
find each other through a PostgreSQL-backed GCD."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.docs import plugin_example, run_pytest


def test_the_documented_example_passes(tmp_path: Path) -> None:
    (tmp_path / "test_example.py").write_text(plugin_example(), encoding="utf-8")
    assert re.search(r"\b2 passed\b", run_pytest(tmp_path))


def test_two_hosts_with_a_postgresql_backed_gcd(tmp_path: Path) -> None:
    (tmp_path / "test_example.py").write_text(plugin_example(), encoding="utf-8")
    (tmp_path / "conftest.py").write_text(
        "import pytest\n\n\n@pytest.fixture\ndef joynr_gcd(joynr_postgres_gcd):\n"
        "    assert joynr_postgres_gcd.settings.store == 'postgres'\n"
        "    return joynr_postgres_gcd\n", encoding="utf-8")
    out = run_pytest(tmp_path)
    assert re.search(r"\b2 passed\b", out)
