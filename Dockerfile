# syntax=docker/dockerfile:1
#
# absa images, one Dockerfile, four targets (see deploy/README.md):
#   runtime (default)  CPU serving: the `serve` extra only (no torch) + the shipped model
#   gpu                the same service on onnxruntime-gpu over a CUDA + cuDNN runtime image
#   train              the `train` extra (torch) with `absa` as entry point: `absa retrain ...`
#   bulk               the `ray` extra over the Ray image: `absa predict --engine ray` on KubeRay
#
#   docker build -t absa:0.1.0 .
#   docker build --target gpu -t absa-gpu:0.1.0 .
#   docker build --target train -t absa-train:0.1.0 .
#   docker build --target bulk -t absa-bulk:0.1.0 .
#
# The install steps are the ones CI and the README use: pip install "." / ".[train]".
# The default model (model/artifacts/default/) is package data: it comes with the install.
# The runtime, gpu and train stages run as uid/gid 10001 and have /models (the model
# registry's mount point in deploy/) owned by that user, so a fresh named volume mounted
# there is writable by it; bulk runs as the Ray image's own user (1000:100).
# ORT_DISABLE_TELEMETRY=1 everywhere: onnxruntime would otherwise send usage events to
# Microsoft and keep a device id under $HOME (absa sets it too, for installs without Docker).

# onnxruntime-gpu from PyPI is built for CUDA 13 + cuDNN 9: it goes with the
# nvidia/cuda:13.x-cudnn-runtime base of the gpu stages; change them together.
ARG ORT_GPU_VERSION=1.31.1
# the CPU image's onnxruntime, pinned so that a rebuild serves what docs/benchmarks.md measured
# (pyproject's `onnxruntime>=1.18` would take whatever is newest); PyPI's GPU build lags it
ARG ORT_VERSION=1.32.0
# torch==2.13.0 for CPU; use https://pypi.org/simple for the CUDA build of torch.
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
# the Ray image of the bulk stage: its Ray version is the RayJob's rayVersion
# (deploy/k8s/ray/rayjob.yaml) and satisfies the `ray` extra's lower bound
ARG RAY_IMAGE=rayproject/ray:2.60.0-py311-cpu

# ---------------------------------------------------------------------------------------
# builder: the serving install in a venv; only /opt/venv goes on to the runtime image.
FROM python:3.11-slim AS builder
ARG ORT_VERSION
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/venv/bin:$PATH
RUN python -m venv /opt/venv && pip install --upgrade pip
WORKDIR /src
COPY pyproject.toml README.md ./
COPY absa ./absa
COPY model ./model
COPY training ./training
COPY service ./service
# the otel extra too: ABSA_TRACING works in the image (OpenTelemetry, a few MB; off unless set)
RUN echo "onnxruntime==${ORT_VERSION}" > /tmp/constraints.txt \
 && PIP_CONSTRAINT=/tmp/constraints.txt pip install "." \
 && PIP_CONSTRAINT=/tmp/constraints.txt pip install ".[otel]"
# Fail the build, not the first request: no torch on the serving path, and the shipped model
# must be in the install (-I: import the installed package, not the sources in /src).
RUN python -I -c "import importlib.util as u; assert u.find_spec('torch') is None, 'torch in serve'" \
 && python -I -c "from absa.model.runtime import DEFAULT_MODEL_DIR as d; assert (d / 'metadata.json').is_file(), f'no model at {d}'"

# ---------------------------------------------------------------------------------------
# gpu-builder: the same install, with onnxruntime swapped for onnxruntime-gpu. Python 3.11
# comes from Ubuntu 22.04, so the venv is built on the CUDA image it will run on.
FROM nvidia/cuda:13.0.2-cudnn-runtime-ubuntu22.04 AS gpu-builder
ARG ORT_GPU_VERSION
ENV DEBIAN_FRONTEND=noninteractive \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/venv/bin:$PATH
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3.11 python3.11-venv \
 && rm -rf /var/lib/apt/lists/*
RUN python3.11 -m venv /opt/venv && pip install --upgrade pip
WORKDIR /src
COPY pyproject.toml README.md ./
COPY absa ./absa
COPY model ./model
COPY training ./training
COPY service ./service
RUN pip install "." && pip install ".[otel]"
# Both distributions provide the `onnxruntime` module: only one may be installed.
RUN pip uninstall -y onnxruntime \
 && pip install "onnxruntime-gpu==${ORT_GPU_VERSION}" \
 && python -I -c "import importlib.util as u; assert u.find_spec('torch') is None, 'torch in serve'"

# ---------------------------------------------------------------------------------------
# gpu: CUDA serving. With ABSA_DEVICE=cuda (set below) the service refuses to start where CUDA
# cannot (no GPU visible, driver too old) rather than serve from the CPU unawares; with
# ABSA_DEVICE=auto it falls back, and the start-up log line and GET /v1/model name the provider.
FROM nvidia/cuda:13.0.2-cudnn-runtime-ubuntu22.04 AS gpu
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3.11 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 absa \
 && useradd --system --uid 10001 --gid absa --home-dir /home/absa --create-home \
    --shell /usr/sbin/nologin absa \
 && install -d -o absa -g absa /models
COPY --from=gpu-builder /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    ABSA_HOST=0.0.0.0 \
    ABSA_PORT=8000 \
    ABSA_WORKERS=1 \
    ORT_DISABLE_TELEMETRY=1 \
    ABSA_DEVICE=cuda \
    ABSA_THREADS=0 \
    ABSA_EXTRACTOR=shipped \
    ABSA_LOG_LEVEL=info
WORKDIR /home/absa
USER 10001:10001
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('ABSA_PORT', '8000') + '/healthz', timeout=4)"]
ENTRYPOINT ["absa", "serve"]
CMD []

# ---------------------------------------------------------------------------------------
# train-builder / train: torch and the training extras, for `absa retrain --config FILE`.
FROM python:3.11-slim AS train-builder
ARG TORCH_INDEX_URL
ARG ORT_VERSION
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/venv/bin:$PATH
RUN python -m venv /opt/venv && pip install --upgrade pip
WORKDIR /src
COPY pyproject.toml README.md ./
COPY absa ./absa
COPY model ./model
COPY training ./training
COPY service ./service
# the runtime image's onnxruntime: the job's gate and parity check score a version with what
# will serve it
RUN echo "onnxruntime==${ORT_VERSION}" > /tmp/constraints.txt \
 && PIP_CONSTRAINT=/tmp/constraints.txt PIP_EXTRA_INDEX_URL="${TORCH_INDEX_URL}" pip install ".[train]"

FROM python:3.11-slim AS train
# the commit the image is built from: the tree travels without .git, and every version a job
# trains records its code (docker build --build-arg ABSA_CODE_VERSION=$(git rev-parse HEAD))
ARG ABSA_CODE_VERSION=""
RUN groupadd --system --gid 10001 absa \
 && useradd --system --uid 10001 --gid absa --home-dir /home/absa --create-home \
    --shell /usr/sbin/nologin absa \
 && install -d -o absa -g absa /models
COPY --from=train-builder /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    MPLCONFIGDIR=/tmp/matplotlib \
    ORT_DISABLE_TELEMETRY=1 \
    ABSA_CODE_VERSION=${ABSA_CODE_VERSION}
WORKDIR /home/absa
USER 10001:10001
# A batch job, not a server: nothing to probe.
HEALTHCHECK NONE
ENTRYPOINT ["absa"]
CMD ["retrain", "--config", "/config/retrain.toml"]

# ---------------------------------------------------------------------------------------
# bulk: `absa predict --engine ray` on a KubeRay cluster (deploy/k8s/ray/). Ray's own image
# (Ray, Python 3.11, and the tools KubeRay's probes run), with the `ray` extra installed over
# it for its user (uid 1000). Every pod of the Ray cluster runs this image.
FROM ${RAY_IMAGE} AS bulk
ARG ORT_VERSION
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    ORT_DISABLE_TELEMETRY=1
WORKDIR /tmp/absa-src
COPY --chown=1000:100 pyproject.toml README.md ./
COPY --chown=1000:100 absa ./absa
COPY --chown=1000:100 model ./model
COPY --chown=1000:100 training ./training
COPY --chown=1000:100 service ./service
USER 1000:100
# the onnxruntime the runtime image serves with: scores as the service's, not PyPI's newest
RUN echo "onnxruntime==${ORT_VERSION}" > /tmp/constraints.txt \
 && PIP_CONSTRAINT=/tmp/constraints.txt pip install ".[ray]" \
 && python -I -c "import absa.bulk.ray_engine, ray.data, pyarrow.parquet" \
 && rm -rf /tmp/absa-src /tmp/constraints.txt
WORKDIR /home/ray
HEALTHCHECK NONE

# ---------------------------------------------------------------------------------------
# runtime: CPU serving, the default target (last stage). Settings are ABSA_* variables
# (absa/settings.py); ABSA_MODEL_DIR is unset, so the model shipped in the package is
# served unless a deployment points it elsewhere (deploy/ sets ABSA_REGISTRY=/models and follows its current version).
FROM python:3.11-slim AS runtime
LABEL org.opencontainers.image.title="absa" \
      org.opencontainers.image.description="Aspect-level sentiment classification service (FastAPI + onnxruntime)" \
      org.opencontainers.image.licenses="Apache-2.0"
RUN groupadd --system --gid 10001 absa \
 && useradd --system --uid 10001 --gid absa --home-dir /home/absa --create-home \
    --shell /usr/sbin/nologin absa \
 && install -d -o absa -g absa /models
COPY --from=builder /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    ABSA_HOST=0.0.0.0 \
    ABSA_PORT=8000 \
    ABSA_WORKERS=1 \
    ORT_DISABLE_TELEMETRY=1 \
    ABSA_DEVICE=cpu \
    ABSA_THREADS=0 \
    ABSA_EXTRACTOR=shipped \
    ABSA_LOG_LEVEL=info
WORKDIR /home/absa
USER 10001:10001
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('ABSA_PORT', '8000') + '/healthz', timeout=4)"]
# `absa serve` is the one place that knows how to start the server: it reads the ABSA_*
# settings (host, port, workers, ...) from the environment set above; flags given as the
# command override them: docker run absa:0.1.0 --workers 2
ENTRYPOINT ["absa", "serve"]
CMD []
