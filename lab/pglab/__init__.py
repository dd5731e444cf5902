"""pglab: measurement lab for pg_tempbuf (throwaway clusters, flush-cost calibration)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("pglab")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0+unknown"
