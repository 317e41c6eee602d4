# syntax=docker/dockerfile:1
# The `hermes` binary in a small runtime image, for `hermes serve` replicas (docs/gateway.md,
# "Replicas and containers"). Build from the repository root:
#   docker build -t hermes .
# Two stages: a full Rust toolchain builds the release binary; the runtime image is distroless
# (glibc, libgcc, CA certificates, a non-root user; no shell, no package manager).

# The toolchain the workspace asks for (`rust-version` in Cargo.toml) or newer.
ARG RUST_IMAGE=rust:1.95-slim-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot

FROM ${RUST_IMAGE} AS build
# `aws-chain`: the AWS credential chain (web identity, container and instance metadata, SSO,
# profiles), which a Bedrock gateway in a container usually needs. Build with
# `--build-arg FEATURES=` to leave it out.
ARG FEATURES=aws-chain
WORKDIR /src
COPY . .
# Cargo's registry and the target folder are build caches, not layers; the binary is copied out
# of the cache mount into the image's filesystem. Debug line tables are stripped (139 MB → about
# 30 MB); symbols stay, so a backtrace still names functions.
ENV CARGO_PROFILE_RELEASE_STRIP=debuginfo
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p hermes-cli --features "${FEATURES}" \
 && install -D -m 0755 target/release/hermes /out/hermes \
 && install -d -m 0700 /out/home

FROM ${RUNTIME_IMAGE}
COPY --from=build /out/hermes /usr/local/bin/hermes
# HERMES_HOME: config.toml (optional; mount one read-only) and, without HERMES_DATABASE_URL,
# state.db. A replica over PostgreSQL keeps nothing here that another replica needs.
COPY --from=build --chown=65532:65532 /out/home /var/lib/hermes
ENV HERMES_HOME=/var/lib/hermes
USER 65532:65532
EXPOSE 8642
ENTRYPOINT ["hermes"]
# Plain HTTP on every interface, for a load balancer or TLS proxy in front (keys must never
# travel in clear beyond it). Metrics off: to scrape them, set `[serve] metrics_token` in a
# mounted config.toml and drop `--no-metrics`.
CMD ["serve", "--listen", "0.0.0.0:8642", "--behind-tls-proxy", "--no-metrics"]
