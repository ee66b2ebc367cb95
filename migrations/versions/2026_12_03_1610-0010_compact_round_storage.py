"""PLACEHOLDER: compact per-round storage (filled in by its change)

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03 16:10:00
"""

from collections.abc import Sequence

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
