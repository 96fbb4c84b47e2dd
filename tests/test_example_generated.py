"""The example's interface package (examples/radio/generated) is what radio.fidl generates.

The package is generated again from examples/radio/radio.fidl with the command line and must
be byte for byte the checked-in one (so the .fidl and the package never drift apart), and mypy
passes on the example that uses it (the provider on the generated provider base, the consumer
through the generated typed proxy).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from pyjoynr.franca.generate import GENERATED_MARK
from tests.support.generated import assert_generated_from

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "radio"
CHECKED_IN = EXAMPLE / "generated"
MYPY = ROOT / ".venv" / "bin" / "mypy"


def test_the_checked_in_package_is_what_radio_fidl_generates(tmp_path: Path) -> None:
    assert_generated_from(EXAMPLE / "radio.fidl", CHECKED_IN,
                          f"{GENERATED_MARK} from radio.fidl -- do not edit.", tmp_path)


def test_mypy_passes_on_the_example(tmp_path: Path) -> None:
    checked = subprocess.run(
        [MYPY, "--cache-dir", str(tmp_path / "mypy-cache"), "examples/radio"],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
