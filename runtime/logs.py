"""The project's logging: escaped log lines and rate-limited repeated warnings.

**Escaping.** Every module of the project gets its logger from :func:`get_logger` (instead of
``logging.getLogger``). Those loggers carry :class:`EscapeFilter`, which formats a record's
message with its arguments and, when the result holds a character that is not printable
(newline, carriage return, tab, ESC and the other C0/C1 controls, DEL, Unicode line and
paragraph separators, bidi and other format characters), replaces the record's message by the
escaped text (the character's Python escape: ``\\n``, ``\\x1b``, ``\\u2028``), its arguments by
none. So a string from the network (a message id, a participant id, a topic, a client id, an
exception's text) can neither forge a log line nor move a terminal's cursor, however the line
was built (``%`` arguments or an f-string). Backslashes are not doubled: an escape in a line is
either an escaped character or a backslash the peer sent. Exception tracebacks (``exc_info``)
are formatted by the handler and stay as they are. A logger-level filter applies to the
records created on that logger, which is why every module needs its own logger from here; the
library adds nothing to the root logger or other global logging state (libjoynr runs inside
applications). The programs (``cluster_controller``, ``gcd``) also put the filter on their
root handlers (:func:`escape_handlers`), which covers the lines of the libraries they use.

**Rate limiting.** One network peer can make a component refuse every message it sends; a
WARNING per refusal is a log flood (a fuzzer wrote 18 MB in six minutes). Such lines go through
a :class:`RepeatedWarnings` (one per router, so one per process: ``router.warnings``), keyed by
the logger, a reason (a short code, e.g. a counter's name) and the peer (the connection or
backend the message came from): the first line of a key is logged in full and opens a window of
``interval_s`` (60 s); later lines of that key within the window are only counted; when the
window ends, one summary line says how many were left out ("1234 more 'bad-field' from client X
in the last 60 s (repeats are counted, not logged)") and the key is forgotten, so the next line
of it is again logged in full. A sustained flood of one key therefore writes two lines per
interval. Counters are not touched here: the components count every refusal before they log it,
so they stay exact.

Summaries are written when the window has ended, by :meth:`RepeatedWarnings.flush`, which runs
on every later line of the same limiter and on every sweep of the router (the router's
housekeeping, a periodic job of the process's :class:`~runtime.tasks.TaskSupervisor`, every
``sweep_interval_s``); no timer or task of its own. The memory is bounded: at most ``max_keys``
keys (256), each key's strings cut to :data:`MAX_KEY_CHARS` characters (a few hundred bytes
per key, well under 1 MB in all); once they are taken, the lines of every further key are
folded into one overflow key (reason ``*``, peer "other peers"). The bookkeeping is pure
(:class:`RepeatLimiter`, times given), and tested as data.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

__all__ = [
    "DEFAULT_INTERVAL_S",
    "DEFAULT_MAX_KEYS",
    "MAX_KEY_CHARS",
    "OVERFLOW_KEY",
    "EscapeFilter",
    "RepeatLimiter",
    "RepeatedWarnings",
    "Summary",
    "escape",
    "escape_handlers",
    "get_logger",
    "peer_of",
]

#: how long a key's later lines are only counted after its first one
DEFAULT_INTERVAL_S = 60.0
#: keys held at once (the last one is the overflow key)
DEFAULT_MAX_KEYS = 256
#: each string of a key is cut to this many characters
MAX_KEY_CHARS = 120
#: where the lines of new keys go once ``max_keys`` are taken (logger name, reason, peer)
OVERFLOW_KEY = ("*", "*", "other peers")


# ---------------------------------------------------------------------------- escaping

def escape(text: str) -> str:
    """``text`` with every character that is not printable replaced by its Python escape
    (``\\n``, ``\\r``, ``\\t``, ``\\x1b``, ``\\u2028``, ...); ``text`` itself when it has none."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class EscapeFilter(logging.Filter):
    """Escapes the formatted message of every record it sees (see the module docstring).

    A record whose message is printable is left as it is (its template and arguments stay, for
    handlers that group by template); a message that cannot be formatted is left to the
    handler, which reports it as logging always does."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            return True
        if not message.isprintable():
            record.msg, record.args = escape(message), None
        return True


_ESCAPE = EscapeFilter()


def get_logger(name: str) -> logging.Logger:
    """The logger ``name`` with the escaping filter on it: use it instead of
    ``logging.getLogger`` in every module of the project."""
    logger = logging.getLogger(name)
    logger.addFilter(_ESCAPE)  # (once: addFilter ignores a filter it already has)
    return logger


def escape_handlers(handlers: Iterable[logging.Handler]) -> None:
    """Put the escaping filter on ``handlers`` (a program's own root handlers, so that the
    lines of the libraries it uses are escaped as well). Never called by library code."""
    for handler in handlers:
        handler.addFilter(_ESCAPE)


def peer_of(origin: object) -> str:
    """The peer part of a rate-limiting key for a message that arrived from ``origin`` (its
    address, or None for this process)."""
    return "this process" if origin is None else repr(origin)


# ---------------------------------------------------------------------------- rate limiting

Key = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class Summary:
    """``count`` lines of ``key`` left out during the ``seconds`` since its first one."""

    key: Key
    count: int
    seconds: float
    #: what the key's first line was given with (:meth:`RepeatLimiter.event`)
    tag: int = 0


class _Window:
    __slots__ = ("count", "start", "tag")

    def __init__(self, start: float, tag: int) -> None:
        self.start = start
        self.count = 0  # lines left out
        self.tag = tag


class RepeatLimiter:
    """Which lines to write, as data: the bookkeeping of :class:`RepeatedWarnings` (see the
    module docstring), with the times given. ``now`` values never decrease."""

    def __init__(self, interval_s: float = DEFAULT_INTERVAL_S,
                 max_keys: int = DEFAULT_MAX_KEYS) -> None:
        if not interval_s > 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s!r}")
        if max_keys < 2:
            raise ValueError(f"max_keys must be at least 2 (one is the overflow key), "
                             f"got {max_keys!r}")
        self.interval_s = interval_s
        self.max_keys = max_keys
        # in the order of their windows' starts (all windows are equally long): the first
        # one ends first
        self._windows: OrderedDict[Key, _Window] = OrderedDict()

    def __len__(self) -> int:
        return len(self._windows)

    def event(self, key: Key, now: float, tag: int = 0) -> tuple[bool, list[Summary]]:
        """One line of ``key`` at ``now``: whether to write it in full, and the summaries of
        the windows that ended before it (to be written first). ``tag`` (e.g. a log level)
        is kept with a new window and given back in its summary."""
        summaries = self.due(now)
        key = (key[0][:MAX_KEY_CHARS], key[1][:MAX_KEY_CHARS], key[2][:MAX_KEY_CHARS])
        windows = self._windows
        window = windows.get(key)
        if window is None and len(windows) >= self.max_keys - 1:
            key = OVERFLOW_KEY  # the last place is kept for the overflow key
            window = windows.get(key)
        if window is None:
            windows[key] = _Window(now, tag)
            return True, summaries
        window.count += 1
        return False, summaries

    def due(self, now: float) -> list[Summary]:
        """The summaries of the windows that ended at ``now`` (those with lines left out);
        their keys are forgotten."""
        windows = self._windows
        summaries: list[Summary] = []
        while windows:
            key, window = next(iter(windows.items()))
            if now - window.start < self.interval_s:
                break
            del windows[key]
            if window.count:
                summaries.append(Summary(key, window.count, now - window.start, window.tag))
        return summaries

    def close(self, now: float) -> list[Summary]:
        """The summaries of every window (ended or not); all keys are forgotten."""
        summaries = [Summary(key, window.count, now - window.start, window.tag)
                     for key, window in self._windows.items() if window.count]
        self._windows.clear()
        return summaries


class RepeatedWarnings:
    """Rate-limited log lines of one process (see the module docstring); ``clock``: monotonic
    seconds."""

    def __init__(self, *, interval_s: float = DEFAULT_INTERVAL_S,
                 max_keys: int = DEFAULT_MAX_KEYS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limiter = RepeatLimiter(interval_s, max_keys)
        self.clock = clock
        self._loggers: dict[str, logging.Logger] = {}
        #: lines left out so far (every one of them is in a summary, or will be)
        self.suppressed = 0

    def warning(self, logger: logging.Logger, reason: str, peer: str, msg: str, *args: object,
                level: int = logging.WARNING, exc_info: bool = False) -> bool:
        """Log ``msg % args`` on ``logger`` unless a line of (``logger``, ``reason``,
        ``peer``) was logged within the interval; True when it was logged."""
        if not logger.isEnabledFor(level):
            return False
        full, summaries = self.limiter.event((logger.name, reason, peer), self.clock(), level)
        self._write(summaries)
        if full:
            self._loggers.setdefault(logger.name, logger)
            logger.log(level, msg, *args, exc_info=exc_info, stacklevel=2)
        else:
            self.suppressed += 1
        return full

    def flush(self, now: float | None = None) -> None:
        """Write the summaries of the windows that have ended (at ``now``: default the clock)."""
        self._write(self.limiter.due(self.clock() if now is None else now))

    def close(self) -> None:
        """Write the summaries of every window, ended or not."""
        self._write(self.limiter.close(self.clock()))

    def _write(self, summaries: list[Summary]) -> None:
        for summary in summaries:
            name, reason, peer = summary.key
            logger = self._loggers.get(name) or get_logger(name if name != "*" else __name__)
            logger.log(summary.tag or logging.WARNING,
                       "%d more %r from %s in the last %.0f s (repeats are counted, not logged)",
                       summary.count, reason, peer, summary.seconds)
