"""vocab.safe_csv: text a spreadsheet would run as a formula is quoted, numbers are not."""

from __future__ import annotations

import csv
import io

import pandas as pd
import pytest

from vocab.safe_csv import FORMULA_STARTS, SafeWriter, frame_csv, safe_cell


@pytest.mark.parametrize("start", FORMULA_STARTS)
def test_each_formula_start_is_quoted(start: str) -> None:
    """=, +, -, @, tab and carriage return in front of text: a leading ' makes it text."""
    assert safe_cell(f'{start}HYPERLINK("http://x")') == f'\'{start}HYPERLINK("http://x")'


@pytest.mark.parametrize(
    "value",
    ["=1+1", "@SUM(A1)", "-2+3+cmd|' /C calc'!A0", "+A1", "-", '=HYPERLINK("http://e.vil")'],
)
def test_formulas_are_quoted(value: str) -> None:
    """The OWASP examples and a lone sign."""
    assert safe_cell(value) == "'" + value


@pytest.mark.parametrize("value", [-0.5, 3, None, "-0.5", "+3", "-1e-3", ".5", "a=1", " =1", ""])
def test_numbers_and_ordinary_text_stay_as_they_are(value: object) -> None:
    """Numbers (and text that is a plain number) are not formulas; nor is text starting
    otherwise."""
    assert safe_cell(value) == value


def test_writer_and_frame_quote_cells_and_headers() -> None:
    """SafeWriter (the API's CSVs) and frame_csv (the dashboard's downloads) agree."""
    buf = io.StringIO()
    SafeWriter(buf).writerow(["=1+1", -0.5, "-0.5", "note"])
    assert next(csv.reader(io.StringIO(buf.getvalue()))) == ["'=1+1", "-0.5", "-0.5", "note"]
    frame = pd.DataFrame({"@name": ["@SUM(A1)", "ok"], "acc": [-0.5, 0.25]})
    rows = list(csv.reader(io.StringIO(frame_csv(frame))))
    assert rows == [["'@name", "acc"], ["'@SUM(A1)", "-0.5"], ["ok", "0.25"]]


def _cells(text: str, delimiter: str) -> list[str]:
    """Every cell as a spreadsheet with this separator reads the CSV."""
    return [c for row in csv.reader(io.StringIO(text), delimiter=delimiter) for c in row]


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("x;=1+1", "x;'=1+1"),
        ("/data/a;@SUM(A1)", "/data/a;'@SUM(A1)"),
        ("x\t=1+1", "x\t'=1+1"),
        ('a,b; "-2+3', "a,b;' \"-2+3"),
        ("line\n+cmd", "line\n'+cmd"),
        ("a;-0.5;b", "a;-0.5;b"),
    ],
)
def test_no_formula_after_another_locales_separator(value: str, written: str) -> None:
    """Read with `;` or tab as the separator, no cell of a comma CSV starts a formula: a `'`
    follows each `;`, tab or line break that a formula would follow (a number stays)."""
    # Prepare
    out = io.StringIO()
    SafeWriter(out).writerow(["name", value, 0.5])
    frame = pd.DataFrame({"name": [value], "acc": [0.5]})
    texts = [out.getvalue(), frame_csv(frame)]
    # Execute
    other = [c for t in texts for sep in (";", "\t") for c in _cells(t, sep)]
    comma = [_cells(texts[0], ",")[1], _cells(texts[1], ",")[2]]  # the frame has a header
    # Assert
    assert not [c for c in other if _formula_start(c)]
    assert comma == [written, written]


def _formula_start(cell: str) -> bool:
    bare = cell.lstrip(' "')
    return bare.startswith(("=", "+", "@")) or (bare.startswith("-") and bare != "-0.5")
