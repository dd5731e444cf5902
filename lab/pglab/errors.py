"""Errors that the CLI reports as a single line, without a traceback."""


class LabError(Exception):
    """A problem the user can act on (bad option, missing server, failed check)."""


class MeasurementMismatch(LabError):
    """A measurement's EXPLAIN output disagrees with what the step must have done."""
