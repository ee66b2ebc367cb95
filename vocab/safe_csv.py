"""Spreadsheet-safe CSV cells: text a spreadsheet would run as a formula is quoted.

A cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return is taken for a formula
by Excel, LibreOffice and Google Sheets (CSV injection, OWASP). Every CSV the lab serves (the
API's sweep summary and plot data) and offers for download (the dashboard's tables) writes its
text cells through `safe_cell`, which puts a `'` in front of such text: the sheet shows it as
text. Shared by lab/ (the API's CSVs) and dashboard/ (its downloads: `frame_csv`).

Numbers stay numbers: only `str` cells are looked at, so a float -0.5 is written as -0.5. A
string that is a plain number ("-0.5", "+3", "1e-3") is left as it is too: a spreadsheet reads
it as that number, never as a formula, and quoting it would turn numbers exported as text
into text. Anything else with such a first character ("-2+3", "=1+1", "@SUM(A1)") is quoted.

Every locale's separator too: a spreadsheet whose separator is `;` (or tab) reads a comma CSV's
line split at each `;`, where double quotes protect nothing (a quote is special only at the
start of a field), and a line break inside a cell starts a new row. So inside a text cell, each
part after a `;`, tab, CR or LF is checked like a whole cell: `x;=1+1` is written `x;'=1+1`,
which no reading turns into a formula.
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


# What splits a cell in some reading of a comma CSV: another locale's separator, a line break.
_OTHER_SEPARATORS = re.compile(r"([;\t\r\n])")


def _formula(text: str) -> bool:
    return text.startswith(FORMULA_STARTS) and not _NUMBER.fullmatch(text)


def _after_separators(text: str) -> str:
    """`text` with a `'` after each `;`, tab, CR or LF that a formula follows."""
    parts = _OTHER_SEPARATORS.split(text)
    for i in range(2, len(parts), 2):  # parts[i] follows the separator parts[i - 1]
        bare = parts[i].lstrip(' "')
        if bare and _formula(bare):
            parts[i] = "'" + parts[i]
    return "".join(parts)


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
    if not isinstance(value, str):
        return value
    if _OTHER_SEPARATORS.search(value):
        value = _after_separators(value)
    return "'" + value if _formula(value) else value


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
