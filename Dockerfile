# syntax=docker/dockerfile:1
# Why: the production image of sqs-gateway. Build: `docker build -t sqs-gateway .`; run:
# `docker run -p 8787:8787 -v sqs-gateway-data:/data sqs-gateway` (README, "The container image").
# No container engine runs in CI: tests/it/packaging/image.rs checks this file against the code and runs
# the image's exact command on the host.

# Build stage. The toolchain and Debian release match the runtime stage's (bookworm, glibc 2.36),
# which is also what CI builds and tests the binary on.
FROM rust:1.95-slim-bookworm AS builder
# jemalloc, the gateway's allocator (tikv-jemalloc-sys), is built from its C sources with make,
# which the slim image lacks (it has gcc).
RUN apt-get update \
 && apt-get install -y --no-install-recommends make \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /build
# Only what the build needs (.dockerignore keeps everything else out of the context).
COPY Cargo.toml Cargo.lock ./
COPY src ./src
# BuildKit cache mounts keep downloaded crates and compiled dependencies between builds; the
# binary is copied out of the cached target directory, which is not part of the image.
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/build/target,sharing=locked \
    cargo build --release --locked --bin sqs-gateway \
 && install -D -m 0755 target/release/sqs-gateway /out/sqs-gateway

# Runtime stage: a slim Debian with CA roots (the sqs backend calls SQS over HTTPS with the
# system's roots) and an unprivileged user owning the data directory.
FROM debian:bookworm-slim AS runtime
LABEL org.opencontainers.image.title="sqs-gateway" \
      org.opencontainers.image.description="Simple, safe HTTPS queue APIs in front of Amazon SQS" \
      org.opencontainers.image.licenses="Apache-2.0"
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 sqsgw \
 && useradd --system --uid 10001 --gid 10001 --home-dir /data --no-create-home \
        --shell /usr/sbin/nologin sqsgw \
 && mkdir /data \
 && chown 10001:10001 /data \
 && chmod 0700 /data
COPY --from=builder /out/sqs-gateway /usr/local/bin/sqs-gateway
USER 10001:10001
# Listen on all interfaces of the container (the generated config's 127.0.0.1 would be
# unreachable through a published port); JSON log lines for log collectors.
ENV SQSGW_LISTEN=0.0.0.0:8787 \
    SQSGW_LOG_FORMAT=json
# The zero-config start keeps its config, secrets and messages here: mount a volume.
VOLUME /data
EXPOSE 8787
# SIGTERM ends long polls and drains requests (up to server.shutdown_grace_seconds, 25 by
# default: give `docker stop` a longer timeout than its 10 s, e.g. --stop-timeout 30).
STOPSIGNAL SIGTERM
# The image has no curl: the binary probes itself (exit 0 on a 2xx from /healthz).
HEALTHCHECK --interval=15s --timeout=5s --start-period=10s --retries=3 \
    CMD ["/usr/local/bin/sqs-gateway", "probe", "--url", "http://127.0.0.1:8787/healthz"]
ENTRYPOINT ["/usr/local/bin/sqs-gateway"]
# The zero-config start (embedded backend) in /data. With a config of your own, replace the
# command: ["serve", "--config", "/etc/sqs-gateway/sqs-gateway.toml"] (SQSGW_LISTEN still applies).
CMD ["serve", "--data-dir", "/data"]
