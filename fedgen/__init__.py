"""fedgen: the FedGen Lab simulation library (specs, data, partitions, models, algorithms, runner).

Imports no FastAPI, Celery or SQLAlchemy; the lab server drives it through
`fedgen.runner.run(spec, sink, resume_from=None, should_stop=None)`.
"""

__version__ = "0.1.0"
