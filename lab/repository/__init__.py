"""Every SQL statement of the lab, split by domain (one module each); no FastAPI here."""
