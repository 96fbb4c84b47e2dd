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
a :class:`RepeatedWarnings` (one per process, given to its router and its other components),
keyed by
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
``sweep_interval_ms``); no timer or task of its own. The memory is bounded: at most ``max_keys``
keys (256), each key's strings cut to :data:`MAX_KEY_CHARS` characters (a few hundred bytes
per key, well under 1 MB in all); once they are taken, the lines of every further key are
folded into one overflow key (reason ``*``, peer "other peers"). The bookkeeping is pure
(:class:`RepeatLimiter`, times given), and tested as data.

**Recent lines.** What a :class:`RepeatedWarnings` writes (the first line of a key in full, and
the summaries) is also kept in :attr:`RepeatedWarnings.recent`, a :class:`RecentLines` ring
bounded in lines and bytes, escaped like the log line; the admin endpoint's status page shows
it ("recent refusals"). It holds only what was logged: it is rate-limited like the log.

**JSON lines.** :class:`JsonFormatter` writes a record as one JSON object a line (time, level,
logger, message, and the fields :data:`LOG_FIELDS` a log call gave with ``extra=``, e.g. the
message id and sender of a dropped message); :func:`setup_process_logging` is what the
programs call to log in the ``text`` or the ``json`` format.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

__all__ = [
    "DEFAULT_INTERVAL_S",
    "DEFAULT_MAX_KEYS",
    "LOG_FIELDS",
    "MAX_KEY_CHARS",
    "OVERFLOW_KEY",
    "EscapeFilter",
    "JsonFormatter",
    "RecentLine",
    "RecentLines",
    "RepeatLimiter",
    "RepeatedWarnings",
    "Summary",
    "escape",
    "escape_handlers",
    "get_logger",
    "message_fields",
    "peer_of",
    "setup_process_logging",
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


# ---------------------------------------------------------------------- recent lines

#: lines kept by a RecentLines ring, and the bytes (UTF-8) they may hold together
DEFAULT_RECENT_LINES = 100
DEFAULT_RECENT_BYTES = 64 * 1024
#: each line's text is cut to this many characters
MAX_RECENT_CHARS = 1000


@dataclass(frozen=True, slots=True)
class RecentLine:
    """One line a :class:`RepeatedWarnings` wrote: when (epoch seconds), its level name, its
    logger, the rate-limiting key's reason and peer, and its text (escaped, cut)."""

    time_s: float
    level: str
    logger: str
    reason: str
    peer: str
    text: str

    @property
    def size(self) -> int:
        return sum(len(part.encode()) for part in
                   (self.level, self.logger, self.reason, self.peer, self.text)) + 64


class RecentLines:
    """The newest lines, at most ``max_lines`` and ``max_bytes`` (the oldest make room)."""

    def __init__(self, max_lines: int = DEFAULT_RECENT_LINES,
                 max_bytes: int = DEFAULT_RECENT_BYTES) -> None:
        if max_lines < 0 or max_bytes < 0:
            raise ValueError("max_lines and max_bytes must be >= 0")
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self._lines: deque[RecentLine] = deque()
        self._bytes = 0
        #: lines added so far (kept or not)
        self.added = 0

    def __len__(self) -> int:
        return len(self._lines)

    @property
    def bytes(self) -> int:
        return self._bytes

    def add(self, level: int, logger: str, reason: str, peer: str, text: str, *,
            time_s: float | None = None) -> None:
        self.added += 1
        line = RecentLine(time.time() if time_s is None else time_s, logging.getLevelName(level),
                          escape(logger[:MAX_KEY_CHARS]), escape(reason[:MAX_KEY_CHARS]),
                          escape(peer[:MAX_KEY_CHARS]), escape(text[:MAX_RECENT_CHARS]))
        size = line.size
        lines = self._lines
        lines.append(line)
        self._bytes += size
        while lines and (len(lines) > self.max_lines or self._bytes > self.max_bytes):
            self._bytes -= lines.popleft().size

    def newest_first(self) -> Iterator[RecentLine]:
        return reversed(list(self._lines))


# ---------------------------------------------------------------------- the rate limit


class RepeatedWarnings:
    """Rate-limited log lines of one process (see the module docstring); ``clock``: monotonic
    seconds. What it writes is kept in :attr:`recent` too."""

    def __init__(self, *, interval_s: float = DEFAULT_INTERVAL_S,
                 max_keys: int = DEFAULT_MAX_KEYS,
                 clock: Callable[[], float] = time.monotonic,
                 recent: RecentLines | None = None) -> None:
        self.limiter = RepeatLimiter(interval_s, max_keys)
        self.clock = clock
        self._loggers: dict[str, logging.Logger] = {}
        #: lines left out so far (every one of them is in a summary, or will be)
        self.suppressed = 0
        #: the newest lines written (first lines and summaries), for the status page
        self.recent = RecentLines() if recent is None else recent

    def warning(self, logger: logging.Logger, reason: str, peer: str, msg: str, *args: object,
                level: int = logging.WARNING, exc_info: bool = False,
                extra: Mapping[str, object] | None = None) -> bool:
        """Log ``msg % args`` on ``logger`` unless a line of (``logger``, ``reason``,
        ``peer``) was logged within the interval; True when it was logged. ``extra``: fields
        of the record (:data:`LOG_FIELDS`, e.g. :func:`message_fields`)."""
        if not logger.isEnabledFor(level):
            return False
        full, summaries = self.limiter.event((logger.name, reason, peer), self.clock(), level)
        self._write(summaries)
        if full:
            self._loggers.setdefault(logger.name, logger)
            logger.log(level, msg, *args, exc_info=exc_info, stacklevel=2, extra=extra)
            try:
                text = msg % args if args else msg
            except (TypeError, ValueError):  # the handler reports a bad format string
                text = msg
            self.recent.add(level, logger.name, reason, peer, text)
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
            level = summary.tag or logging.WARNING
            logger.log(level,
                       "%d more %r from %s in the last %.0f s (repeats are counted, not logged)",
                       summary.count, reason, peer, summary.seconds)
            self.recent.add(level, name, reason, peer,
                            f"{summary.count} more {reason!r} from {peer} in the last "
                            f"{summary.seconds:.0f} s")


# ---------------------------------------------------------------------- JSON lines

#: the record attributes a JSON line carries when a log call gave them (``extra=``):
#: the message a line is about (id, sender, recipient), a participant, a websocket client
LOG_FIELDS: tuple[str, ...] = ("messageId", "sender", "recipient", "participantId", "clientId")


class _Described(Protocol):
    id: str
    sender: str
    recipient: str


def message_fields(message: _Described) -> dict[str, object]:
    """The ``extra=`` fields of a log line about one message."""
    return {"messageId": message.id, "sender": message.sender, "recipient": message.recipient}


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ``time`` (UTC, ISO 8601, milliseconds), ``level``, ``logger``,
    ``message``, the :data:`LOG_FIELDS` the record has, and ``exception`` (the formatted
    traceback) when there is one. Non-ASCII characters are escaped (``\\uXXXX``): whatever a
    peer put into a field, the line stays one line."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(
                timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = record.__dict__
        for name in LOG_FIELDS:
            value = fields.get(name)
            if value is not None:
                line[name] = value if isinstance(value, str | int | float | bool) else str(value)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, ensure_ascii=True, default=str)


#: the text format of the programs' log lines
TEXT_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"
LOG_FORMATS = ("text", "json")


def setup_process_logging(level: str, log_format: str = "text") -> logging.Handler:
    """A program's logging (never called by library code): one handler on the root logger,
    writing to stderr in ``log_format`` (``text`` or ``json``), with the escaping filter (the
    libraries' lines too)."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {', '.join(LOG_FORMATS)}, not "
                         f"{log_format!r}")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json"
                         else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level.upper(), handlers=[handler])
    escape_handlers(logging.getLogger().handlers)
    return handler
