"""``python -m sharp_cer.cli``: the ``sharp-cer`` command."""

from __future__ import annotations

import sys

from .entry import main

sys.exit(main())
