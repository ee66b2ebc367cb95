# One image for api, workers and dashboard: `fedgen-lab <command>` picks the role.
FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 FEDGEN_HOME=/data/fedgen
WORKDIR /app
# Fashion-MNIST from Debian's package, found by fedgen in /usr/share/datasets/fashion-mnist.
RUN apt-get update && apt-get install -y --no-install-recommends dataset-fashion-mnist \
    && rm -rf /var/lib/apt/lists/*
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
