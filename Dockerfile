# One image for api, workers and dashboard: `fedgen-lab <command>` picks the role.
FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 FEDGEN_HOME=/data/fedgen
WORKDIR /app
COPY pyproject.toml README.md ./
COPY fedgen ./fedgen
COPY api ./api
COPY worker ./worker
COPY dashboard ./dashboard
COPY migrations ./migrations
COPY alembic.ini ./
RUN pip install ".[service,dashboard]"
EXPOSE 8000 8501
CMD ["fedgen-lab", "api", "--host", "0.0.0.0", "--port", "8000"]
