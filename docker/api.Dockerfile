# The API image: no CUDA, no CuPy. Build from the repository root:
#   docker build -f docker/api.Dockerfile -t tessera-api .
FROM node:20-slim AS page
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund

FROM python:3.12-slim
WORKDIR /app
COPY --from=page /app/node_modules ./node_modules
COPY pyproject.toml README.md ./
COPY service ./service
COPY workers ./workers
COPY tessera ./tessera
RUN pip install --no-cache-dir ".[s3]" && useradd --uid 10001 tessera && mkdir -p /data && chown tessera /data
USER tessera
ENV TESSERA_DATA_DIR=/data
# glibc backs large allocations (an upload's bytes, the parsed arrays) with huge pages: far fewer
# page faults when a 300 MB body is joined and parsed
ENV GLIBC_TUNABLES=glibc.malloc.hugetlb=1
EXPOSE 8000
CMD ["uvicorn", "--factory", "service.main:create_app", "--host", "0.0.0.0", "--port", "8000"]
