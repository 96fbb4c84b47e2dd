"""Debian's Chromium, headless, driven by selenium through Debian's chromedriver.

A test that needs the browser fails (never skips) with a clear message when Chromium, the
driver or selenium is missing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


@contextlib.contextmanager
def headless_chromium(width: int = 1280, height: int = 1600) -> Iterator[Any]:
    """A selenium WebDriver on a headless Chromium; quit at the end."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        pytest.fail(f"the page tests need Debian's chromium and chromium-driver: {missing} "
                    "missing (apt-get install -y chromium chromium-driver)")
    try:
        from selenium import webdriver  # noqa: PLC0415
        from selenium.webdriver.chrome.service import Service  # noqa: PLC0415
    except ImportError as exc:
        pytest.fail(f"the page tests need selenium (pip install 'selenium>=4.30'): {exc}")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", "--disable-extensions",
                     "--no-first-run", "--no-default-browser-check",
                     f"--window-size={width},{height}"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def artifact_path(directory: Path, name: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    return directory / name


__all__ = ["CHROMEDRIVER", "CHROMIUM", "artifact_path", "headless_chromium"]
