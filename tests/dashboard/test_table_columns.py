"""The tables' column configs (dashboard.table_columns), which need no running app."""

from __future__ import annotations

import streamlit as st

from dashboard import table_columns


def test_text_columns_name_each_column_once() -> None:
    """{name: help} gives the same configs as TextColumn(name, help=...) written out."""
    # Execute
    out = table_columns.text_columns(
        {"slot": "The worker process", "queues": "The run queues it serves"}
    )
    # Assert
    assert out == {
        "slot": st.column_config.TextColumn("slot", help="The worker process"),
        "queues": st.column_config.TextColumn("queues", help="The run queues it serves"),
    }
    assert table_columns.text_columns({}) == {}
