"""FedGen Lab worker: the Celery app, its one task, and the run execution it calls."""
