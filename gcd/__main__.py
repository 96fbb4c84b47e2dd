"""A Global Capabilities Directory instance: ``python -m gcd --help``."""

import sys

from gcd.service import main

sys.exit(main())
