"""Every SQL statement of the lab server, split by domain; no FastAPI here."""

from api.repository import checkpoints, metrics, runs, sweeps, users

__all__ = ["checkpoints", "metrics", "runs", "sweeps", "users"]
