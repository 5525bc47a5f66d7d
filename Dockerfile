# syntax=docker/dockerfile:1
# The kernelcup service image: web server, queue worker, Discord bot and CLI; no GPU. Submissions run where the
# worker's routes send them (KERNELCUP_ROUTES: Modal, GitHub Actions runners); a GPU box that runs jobs
# itself uses `make setup` and `kernelcup worker --launcher local` instead of this image.
# compose.yaml runs them together with PostgreSQL (docs/deploy.md).
#
#   docker build -t kernelcup .
#   docker run --env-file .env -p 127.0.0.1:8000:8000 kernelcup    # the web server (the default command)
#   docker run --env-file .env kernelcup worker                     # or: bot, db upgrade, admin stats, ...
FROM python:3.12-slim-bookworm

LABEL org.opencontainers.image.title="kernelcup" \
      org.opencontainers.image.description="kernelcup service: Discord bot, queue worker and CLI (no GPU)" \
      org.opencontainers.image.licenses="Apache-2.0"

ENV PATH=/opt/kernelcup/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    KERNELCUP_DATA_DIR=/data

RUN useradd --create-home --uid 10001 --user-group kernelcup \
 && mkdir -p /data \
 && chown 10001:10001 /data

WORKDIR /app
# Dependencies first, exactly as pinned (and hashed) in requirements.lock (`make lock`): a layer that survives
# code changes. Then the code, installed in place so the migrations and problems next to the packages are found
# where the code expects them.
COPY requirements.lock ./
RUN python -m venv /opt/kernelcup \
 && /opt/kernelcup/bin/pip install --no-cache-dir --require-hashes -r requirements.lock
COPY pyproject.toml README.md ./
COPY kernelcup ./kernelcup
COPY leaderboards ./leaderboards
COPY runners ./runners
COPY bot ./bot
COPY web ./web
COPY migrations ./migrations
COPY problems ./problems
RUN /opt/kernelcup/bin/pip install --no-cache-dir --no-deps --editable . \
 && kernelcup version

USER 10001:10001
VOLUME ["/data"]

EXPOSE 8000
# /readyz: 200 when the database answers, its schema is current and every open board's device has a live worker;
# 503 otherwise, with what is missing (the worker and bot containers check `kernelcup version` instead: compose.yaml).
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/readyz', timeout=8)"]
ENTRYPOINT ["kernelcup"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000", "--no-worker"]
