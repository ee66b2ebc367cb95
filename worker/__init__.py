"""FedGen Lab worker: the Celery app, its one task, the claimed run it executes
(worker/claimed_run.py), its slots under a supervisor, and its own start (`python -m worker`,
worker/main.py, which `fedgen-lab worker` runs). It imports no api/, dashboard/ or admin/."""
