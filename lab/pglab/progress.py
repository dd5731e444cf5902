"""The lab's progress bar (rich, on stderr): what runs now, done/total, elapsed and remaining."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


def lab_progress(console: Console) -> Progress:
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
    )


PIPED_WIDTH = 160


def result_console() -> Console:
    """stdout for result tables: the terminal's width, or 160 columns when piped to a file
    (rich's default of 80 would fold wide tables into unreadable cells)."""
    console = Console()
    return console if console.is_terminal else Console(width=PIPED_WIDTH)
