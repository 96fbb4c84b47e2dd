"""runtime.logs as data: the escaping of log lines and the rate limit of repeated warnings."""

from __future__ import annotations

import io
import logging
import re
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pyjoynr.runtime.logs import (
    MAX_KEY_CHARS,
    OVERFLOW_KEY,
    RepeatedWarnings,
    RepeatLimiter,
    Summary,
    escape,
    get_logger,
)

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("cluster_controller", "gcd", "libjoynr", "programming", "runtime", "transports")
SOURCE = ROOT / "pyjoynr"

# ====================================================================== escaping

ESCAPES = [
    ("plain text", "plain text"),
    ("", ""),
    ("quotes ' \" and \\ stay", "quotes ' \" and \\ stay"),
    ("umlauts äöü and 日本 stay", "umlauts äöü and 日本 stay"),
    ("id\n2026-01-01 00:00:00 ERROR forged", "id\\n2026-01-01 00:00:00 ERROR forged"),
    ("cr\rlf\r\n", "cr\\rlf\\r\\n"),
    ("tab\tstop", "tab\\tstop"),
    ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
    ("nul\x00 del\x7f", "nul\\x00 del\\x7f"),
    ("c1 csi \x9b2J nel \x85", "c1 csi \\x9b2J nel \\x85"),
    ("line sep \u2028 para sep \u2029", "line sep \\u2028 para sep \\u2029"),
    ("bidi \u202e override", "bidi \\u202e override"),
    ("lone surrogate \ud800", "lone surrogate \\ud800"),
]


@pytest.mark.parametrize(("text", "escaped"), ESCAPES, ids=[repr(t)[:30] for t, _ in ESCAPES])
def test_escape(text: str, escaped: str) -> None:
    assert escape(text) == escaped
    assert escape(text).isprintable()
    if text.isprintable():
        assert escape(text) is text  # the common case costs no copy


@pytest.fixture
def captured() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    """A project logger (from get_logger) with a real handler writing to a StringIO."""
    logger = get_logger(f"tests.logs.{uuid.uuid4().hex}")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    yield logger, stream
    logger.removeHandler(handler)


FORGED = "x\nCRITICAL forged: the admin password is hunter2\x1b[2J"


def test_a_newline_in_an_argument_forges_no_line(
        captured: tuple[logging.Logger, io.StringIO]) -> None:
    logger, stream = captured
    logger.warning("dropped %s: %r", FORGED, FORGED)
    logger.warning(f"f-string {FORGED}")  # noqa: G004 - a message built before logging
    logger.info("no args %s")  # a '%' without arguments stays as it is
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3, lines
    assert all(line.startswith(("WARNING ", "INFO ")) for line in lines)
    assert "x\\nCRITICAL forged" in lines[0] and "\\x1b[2J" in lines[0]
    assert lines[1].endswith("f-string x\\nCRITICAL forged: the admin password is hunter2"
                             "\\x1b[2J")
    assert lines[2].endswith("no args %s")
    assert "\x1b" not in stream.getvalue()


def test_printable_records_keep_their_template(
        captured: tuple[logging.Logger, io.StringIO]) -> None:
    logger, _ = captured
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    keep = Keep()
    logger.addHandler(keep)
    try:
        logger.warning("route %s -> %s", "a", "b")
        logger.warning("route %s -> %s", "a\n", "b")
    finally:
        logger.removeHandler(keep)
    assert (records[0].msg, records[0].args) == ("route %s -> %s", ("a", "b"))
    assert (records[1].msg, records[1].args) == ("route a\\n -> b", None)


def test_tracebacks_stay_as_they_are(captured: tuple[logging.Logger, io.StringIO]) -> None:
    logger, stream = captured
    try:
        raise ValueError("bad\nvalue")
    except ValueError:
        logger.exception("failed on %s", "id\n1")
    text = stream.getvalue()
    assert text.startswith("ERROR ") and "failed on id\\n1\nTraceback" in text
    assert "ValueError: bad\nvalue" in text


def test_get_logger_adds_the_filter_once() -> None:
    name = f"tests.logs.{uuid.uuid4().hex}"
    assert get_logger(name) is get_logger(name) is logging.getLogger(name)
    assert len(logging.getLogger(name).filters) == 1


def test_every_module_of_the_project_logs_through_get_logger() -> None:
    """A module with a logger of plain logging.getLogger would log network strings
    unescaped: the programs may only adjust other libraries' loggers with it."""
    offenders = []
    for package in PACKAGES:
        for path in sorted((SOURCE / package).rglob("*.py")):
            if path == SOURCE / "runtime" / "logs.py":
                continue
            for n, line in enumerate(path.read_text().splitlines(), start=1):
                if "logging.getLogger(" in line and not re.search(
                        r"logging\.getLogger\((\"[a-z.]+\"|name|)\)\.(setLevel|handlers)",
                        line):
                    offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert offenders == []
    # and every module that logs has a logger of its own from get_logger
    for package in PACKAGES:
        for path in sorted((SOURCE / package).rglob("*.py")):
            text = path.read_text()
            if re.search(r"\blog\.(debug|info|warning|error|exception|log)\(", text):
                assert re.search(r"^log = get_logger\(", text, re.M), path


def test_every_project_logger_in_use_has_the_filter() -> None:
    import pyjoynr.cluster_controller.controller  # noqa: PLC0415 - loads every module
    import pyjoynr.gcd.service  # noqa: PLC0415
    import pyjoynr.libjoynr  # noqa: F401, PLC0415

    loaded = [name for name in sys.modules
              if name.startswith("pyjoynr.") and name.split(".")[1] in PACKAGES]
    for name in loaded:
        log = getattr(sys.modules[name], "log", None)
        if isinstance(log, logging.Logger):
            assert any(type(f).__name__ == "EscapeFilter" for f in log.filters), name


# ====================================================================== the limiter as data

A = ("pyjoynr.transports.mqtt.transport", "not-msgpack", "backend g")
B = ("pyjoynr.transports.mqtt.transport", "expired", "backend g")
C = ("pyjoynr.transports.mqtt.transport", "not-msgpack", "backend h")

#: (time, key, logged in full?, summaries written before it)
SCRIPT: list[tuple[float, tuple[str, str, str], bool, list[Summary]]] = [
    (0.0, A, True, []),
    (1.0, A, False, []),
    (2.0, A, False, []),
    (2.0, B, True, []),  # another reason: a key of its own
    (3.0, C, True, []),  # another peer: a key of its own
    (9.9, A, False, []),
    # A's window (0..10) has ended: its summary first, then A starts again in full
    (10.0, A, True, [Summary(A, 3, 10.0)]),
    # B's window ended with nothing left out: no summary; C's ends at 13
    (12.5, B, True, []),
    (13.0, B, False, []),
    (30.0, A, True, [Summary(B, 1, 17.5)]),  # A's second window had no repeats
]


def test_the_limiter_script() -> None:
    limiter = RepeatLimiter(interval_s=10.0, max_keys=8)
    for now, key, full, summaries in SCRIPT:
        assert limiter.event(key, now) == (full, summaries), (now, key)
    assert limiter.due(39.9) == []
    assert len(limiter) == 1  # A, since 30
    assert limiter.close(40.0) == []
    assert len(limiter) == 0


def test_the_limiter_flushes_without_a_new_event() -> None:
    limiter = RepeatLimiter(interval_s=10.0)
    for n in range(5000):
        assert limiter.event(A, n / 1000) == (n == 0, [])
    assert limiter.due(9.99) == []
    assert limiter.due(10.0) == [Summary(A, 4999, 10.0)]
    assert limiter.due(100.0) == [] and len(limiter) == 0
    assert limiter.event(A, 100.0) == (True, [])  # forgotten: in full again


def test_the_limiter_keeps_the_tag_of_the_first_line() -> None:
    limiter = RepeatLimiter(interval_s=1.0)
    limiter.event(A, 0.0, logging.INFO)
    limiter.event(A, 0.5, logging.ERROR)
    assert limiter.due(1.0) == [Summary(A, 1, 1.0, logging.INFO)]


def test_the_limiter_is_bounded_and_folds_the_overflow_into_one_key() -> None:
    limiter = RepeatLimiter(interval_s=60.0, max_keys=4)
    decisions = [limiter.event(("log", "bad", f"peer {n}"), 0.0)[0] for n in range(10_000)]
    # three keys of their own, then the overflow key: its first line in full, the rest counted
    assert decisions[:4] == [True, True, True, True]
    assert not any(decisions[4:])
    assert len(limiter) == 4
    assert limiter.due(60.0) == [Summary(OVERFLOW_KEY, 10_000 - 4, 60.0)]


def test_the_limiter_cuts_long_key_strings() -> None:
    limiter = RepeatLimiter(interval_s=60.0)
    huge = "p" * 1_000_000
    assert limiter.event(("log", "r" * 10_000, huge), 0.0)[0] is True
    assert limiter.event(("log", "r" * 10_000, huge + "other"), 1.0)[0] is False  # same cut
    [summary] = limiter.close(2.0)
    assert summary.key == ("log", "r" * MAX_KEY_CHARS, "p" * MAX_KEY_CHARS)


@pytest.mark.parametrize(("interval_s", "max_keys"), [(0, 10), (-1, 10), (1, 1), (1, 0)])
def test_the_limiter_settings_are_checked(interval_s: float, max_keys: int) -> None:
    with pytest.raises(ValueError):
        RepeatLimiter(interval_s, max_keys)


# ====================================================================== with a logger


def test_repeated_warnings_write_the_first_line_and_a_summary(
        captured: tuple[logging.Logger, io.StringIO]) -> None:
    logger, stream = captured
    now = [100.0]
    warnings = RepeatedWarnings(interval_s=60.0, clock=lambda: now[0])
    for n in range(5000):
        warnings.warning(logger, "bad-field", "client c\nFAKE", "refused %s", f"frame {n}")
        warnings.warning(logger, "expired", "client c", "dropped %s", f"frame {n}",
                         level=logging.INFO)
    assert warnings.suppressed == 2 * 4999
    now[0] = 159.0
    warnings.flush()
    assert stream.getvalue().splitlines() == [
        f"WARNING {logger.name}: refused frame 0",
        f"INFO {logger.name}: dropped frame 0",
    ]
    now[0] = 160.0
    warnings.flush()
    assert stream.getvalue().splitlines()[2:] == [
        f"WARNING {logger.name}: 4999 more 'bad-field' from client c\\nFAKE in the last 60 s "
        "(repeats are counted, not logged)",
        f"INFO {logger.name}: 4999 more 'expired' from client c in the last 60 s "
        "(repeats are counted, not logged)",
    ]


def test_repeated_warnings_of_a_disabled_level_cost_nothing(
        captured: tuple[logging.Logger, io.StringIO]) -> None:
    logger, stream = captured
    logger.setLevel(logging.WARNING)
    warnings = RepeatedWarnings(clock=lambda: 0.0)
    assert warnings.warning(logger, "r", "p", "x", level=logging.INFO) is False
    assert len(warnings.limiter) == 0 and stream.getvalue() == ""


def test_close_writes_every_summary(captured: tuple[logging.Logger, io.StringIO]) -> None:
    logger, stream = captured
    warnings = RepeatedWarnings(clock=lambda: 5.0)
    for _ in range(3):
        warnings.warning(logger, "r", "p", "line")
    warnings.close()
    assert stream.getvalue().splitlines()[-1].endswith(
        "2 more 'r' from p in the last 0 s (repeats are counted, not logged)")
