"""Spreadsheet-safe CSV cells: text a spreadsheet would run as a formula is quoted.

A cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return is taken for a formula
by Excel, LibreOffice and Google Sheets (CSV injection, OWASP). Every CSV the lab serves (the
API's sweep summary and plot data) and offers for download (the dashboard's tables) writes its
text cells through `safe_cell`, which puts a `'` in front of such text: the sheet shows it as
text. Shared by api/ and dashboard/ (which must not import api/ internals).

Numbers stay numbers: only `str` cells are looked at, so a float -0.5 is written as -0.5. A
string that is a plain number ("-0.5", "+3", "1e-3") is left as it is too: a spreadsheet reads
it as that number, never as a formula, and quoting it would turn numbers exported as text
into text. Anything else with such a first character ("-2+3", "=1+1", "@SUM(A1)") is quoted.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    import pandas as pd

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def safe_cell(value: Any) -> Any:
    """`value`, with a leading `'` when it is text a spreadsheet would run as a formula.

    Parameters
    ----------
    value : Any
        One cell; only a `str` is ever changed.

    Returns
    -------
    Any
        The cell to write.
    """
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        if _NUMBER.fullmatch(value):
            return value
        return "'" + value
    return value


def safe_row(values: Iterable[Any]) -> list[Any]:
    """A CSV row with each cell through `safe_cell`."""
    return [safe_cell(v) for v in values]


class SafeWriter:
    """A `csv.writer` whose rows go through `safe_row`."""

    def __init__(self, out: TextIO) -> None:
        self._writer = csv.writer(out)

    def writerow(self, values: Iterable[Any]) -> None:
        """Write one row, its text cells made safe."""
        self._writer.writerow(safe_row(values))


def frame_csv(frame: pd.DataFrame) -> str:
    """`frame` as CSV text (no index), its header and text cells through `safe_cell`.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table to export.

    Returns
    -------
    str
        The CSV text.
    """
    safe = frame.map(safe_cell).rename(columns=safe_cell)
    return str(safe.to_csv(index=False))
