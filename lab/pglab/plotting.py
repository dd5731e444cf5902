"""matplotlib for every experiment's plots: the backend is chosen here, once.

The lab writes PNG files and never opens a window, so it uses the Agg backend whatever the
machine offers; every `plots.py` imports `plt` from here.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["plt"]
