"""What every section of the experiment spec shares: the hard limits, the strict base model
and the error for a rule between fields (`fedgen.spec` and `fedgen.data_spec` build on it).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

# Hard limits, in one place so the docs and error messages agree.
# Cross-device scale: up to 10,000 users, of whom up to 1,000 train in one round (per-user state
# is created on a user's first round: fedgen.algorithms.client_state).
MAX_USERS = 10_000
MAX_USERS_PER_ROUND = 1000
MAX_ROUNDS = 10_000
MAX_LOCAL_STEPS = 1000
MAX_BATCH = 4096
MAX_DIM = 4096
MAX_SEED = 2**31 - 1
MAX_CLASSES = 1000


class StrictModel(BaseModel):
    # allow_inf_nan=False: every float field of every section refuses NaN and ±Infinity
    # (YAML's .nan, JSON's NaN), reported by format_validation_error as NOT_FINITE says.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class CrossFieldError(ValueError):
    """A rule between fields; reported once per field it names, without the whole spec."""

    def __init__(self, fields: tuple[str, ...], message: str) -> None:
        self.fields = fields
        super().__init__(message)
