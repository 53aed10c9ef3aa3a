# The GPU worker image: CUDA runtime and CuPy; one container per GPU. Build from the repository root:
#   docker build -f docker/worker.Dockerfile -t tessera-worker .
FROM nvidia/cuda:13.0.0-runtime-ubuntu24.04
RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-venv \
    && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /venv
ENV PATH=/venv/bin:$PATH
WORKDIR /app
COPY pyproject.toml README.md ./
COPY service ./service
COPY workers ./workers
COPY tessera ./tessera
RUN pip install --no-cache-dir ".[gpu,s3]" && useradd --uid 10001 tessera && mkdir -p /data && chown tessera /data
USER tessera
ENV TESSERA_DATA_DIR=/data
CMD ["python", "-m", "workers"]
