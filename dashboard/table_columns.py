"""Column configs of the tables the pages show (`st.dataframe`'s `column_config`)."""

from __future__ import annotations

from typing import Any

import streamlit as st


def text_columns(helps: dict[str, str]) -> dict[str, Any]:
    """`st.dataframe` column configs of text columns from column name -> help (the tooltip of
    its header); merge them with other configs in a page's `column_config`."""
    return {name: st.column_config.TextColumn(name, help=text) for name, text in helps.items()}
