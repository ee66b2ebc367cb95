"""Request and response models of the REST API, one module per topic (runs, sweeps, studies, ...).

They import no server code (no lab/, FastAPI or SQLAlchemy): the dashboard parses the API's
answers into them, so each body is declared once for both sides of the wire.
"""
