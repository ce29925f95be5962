# shardgate's container image (docs/deploy.md).
#
#   docker build -t shardgate .
#   docker run --read-only -p 8080:8080 shardgate          # the embedded default, on a volume
#   docker exec <container> shardgate token --admin         # its admin token
#
# Two stages: the release build (profile `dist`: release, stripped) in the Rust image, then only
# the binary on distroless/cc (glibc and libgcc, CA certificates, no shell, no package manager).
# It runs as the numeric user 65532 and writes only to its two volumes, so the root file system
# may be read-only (`docker run --read-only`, Kubernetes' readOnlyRootFilesystem). Nothing is
# downloaded when the gateway runs; the build fetches crates from crates.io as Cargo.lock pins
# them (--locked).

FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --locked --profile dist -p shardgate-api --bin shardgate \
    && install -D -m 0755 target/dist/shardgate /out/usr/local/bin/shardgate \
    && install -d -m 0700 -o 65532 -g 65532 /out/var/lib/shardgate

FROM gcr.io/distroless/cc-debian12:nonroot
# The binary stays root's (the user cannot replace it); the data directory is the user's.
COPY --from=build /out/usr/local/bin/shardgate /usr/local/bin/shardgate
COPY --from=build --chown=65532:65532 /out/var/lib/shardgate /var/lib/shardgate
USER 65532:65532
WORKDIR /var/lib/shardgate
# The embedded default keeps its SQLite catalog, shards and generated secret here; with a
# PostgreSQL catalog nothing durable is written, but the directory must stay writable.
VOLUME ["/var/lib/shardgate", "/tmp"]
ENV SHARDGATE_LISTEN=0.0.0.0:8080 \
    SHARDGATE_DATA_DIR=/var/lib/shardgate \
    TMPDIR=/tmp
EXPOSE 8080
# The binary probes itself (there is no curl in the image): exit 0 when /readyz answers 2xx.
# It probes port 8080; give `--health-cmd` of your own if SHARDGATE_LISTEN moves it.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD ["/usr/local/bin/shardgate", "probe", "--url", "http://127.0.0.1:8080/readyz", "--timeout", "2s"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/shardgate"]
CMD ["serve"]
LABEL org.opencontainers.image.title="shardgate" \
      org.opencontainers.image.description="A multi-tenant sharded storage gateway" \
      org.opencontainers.image.licenses="MIT OR Apache-2.0"
