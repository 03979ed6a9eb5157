# tortoise-bot container image: `tortoise-bot serve` by default (cron schedule + health endpoint).
# Build: docker build -t tortoise-bot .
FROM python:3.11-slim-bookworm AS build
# gcc builds the compiled XOR-chunk decoder (bot/metrics/xor_chunks.c) into the wheel.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY bot ./bot
COPY templates ./templates
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM registry.k8s.io/kubectl:v1.32.4 AS kubectl

FROM python:3.11-slim-bookworm
# git clones repositories; kubectl renders Kustomize overlays to verify every edit.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends git ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=kubectl /bin/kubectl /usr/local/bin/kubectl
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin tortoise
USER 10001
WORKDIR /home/tortoise
ENV PYTHONUNBUFFERED=1
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s CMD ["python", "-c", "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8080/healthz').status != 200)"]
ENTRYPOINT ["tortoise-bot"]
CMD ["serve", "--config", "/etc/tortoise-bot/bot.yaml", "--health-host", "0.0.0.0"]
