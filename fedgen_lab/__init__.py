"""fedgen_lab: the lab's public Python client, for notebooks and scripts.

    import fedgen_lab
    lab = fedgen_lab.connect()              # FEDGEN_API_URL / FEDGEN_TOKEN
    run = lab.submit("spec.yaml").wait()
    run.metrics()                           # a DataFrame, one row per round
    model = run.model()                     # the final global model, weights loaded

Needs the base install plus httpx and pandas (no FastAPI, SQLAlchemy or Streamlit).
"""

from fedgen_lab.errors import (
    LabAuthError,
    LabBusy,
    LabError,
    LabNotFound,
    LabUnreachable,
    LabValidationError,
    RunFailed,
)
from fedgen_lab.lab import Lab, Run, Sweep, connect

__all__ = [
    "Lab",
    "LabAuthError",
    "LabBusy",
    "LabError",
    "LabNotFound",
    "LabUnreachable",
    "LabValidationError",
    "Run",
    "RunFailed",
    "Sweep",
    "connect",
]
