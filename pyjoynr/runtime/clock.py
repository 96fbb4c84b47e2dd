"""Wall-clock time in joynr's unit: epoch milliseconds (expiry dates are absolute)."""

import time


def now_ms() -> int:
    return time.time_ns() // 1_000_000
