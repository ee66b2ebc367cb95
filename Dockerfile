# One image for api, workers and dashboard: `fedgen-lab <command>` picks the role.
# Build stage: a wheel of the project (packages, migrations and the dashboard's files), built
# as tests/migrations/test_wheel_install.py builds it and installs it outside the source tree.
FROM python:3.11-slim AS build
WORKDIR /src
RUN pip install --no-cache-dir "setuptools>=68" wheel
COPY pyproject.toml README.md ./
COPY fedgen ./fedgen
COPY vocab ./vocab
COPY lab ./lab
COPY api ./api
COPY worker ./worker
COPY dashboard ./dashboard
COPY migrations ./migrations
COPY fedgen_lab ./fedgen_lab
COPY admin ./admin
RUN pip wheel --no-deps --no-build-isolation -w /wheels .

# The image: the wheel installed with its extras, no source tree (the working folder is empty).
FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 FEDGEN_HOME=/data/fedgen
WORKDIR /app
# Fashion-MNIST from Debian's package, found by fedgen in /usr/share/datasets/fashion-mnist.
RUN apt-get update && apt-get install -y --no-install-recommends dataset-fashion-mnist \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /wheels /wheels
RUN pip install "$(ls /wheels/fedgen_lab-*.whl)[service,dashboard]" && rm -rf /wheels
EXPOSE 8000 8501
CMD ["fedgen-lab", "api", "--host", "0.0.0.0", "--port", "8000"]
