"""vocab: the lab's shared vocabulary, one floor above fedgen/ and below lab/, api/, worker/,
dashboard/ and fedgen_lab/.

What the lab's server and its clients say to each other and about a run, declared once:

- `vocab.schemas`: the REST API's request and response models (both ends of the wire);
- `vocab.run_status`: run statuses and queue priorities;
- `vocab.webhook_events`: the events a webhook can subscribe to;
- `vocab.footprint`: what a run stores (bytes a round, checkpoints kept, the keep rule);
- `vocab.data_roots`: where a lab lets runs read data, and the check of a spec's data paths;
- `vocab.host_datasets`: which registered datasets a worker's host has (what it offers);
- `vocab.safe_csv`: CSV cells a spreadsheet will not run as formulas;
- `vocab.run_names`: a run's and an algorithm's display name;
- `vocab.pushed_results`: whether a pushed run folder's results hold together.

It imports only fedgen/, itself, pydantic and the standard library: no lab/, api/, worker/ or
dashboard/ code and no FastAPI, SQLAlchemy, Celery or Streamlit (tests/test_layering.py).
fedgen/ imports nothing from it: a researcher installs the library alone.
"""
