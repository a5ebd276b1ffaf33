# mcp-chain as a container image: one static binary (musl) and the CA
# certificates, nothing else, run as a user that is not root.
#
#   docker build -t mcp-chain .            (or: buildah build -t mcp-chain .)
#   docker run -p 8080:8080 -v ./front.toml:/etc/mcp-chain/config.toml:ro mcp-chain
#
# The config must give the front tokens or OAuth (`[front] tokens`,
# `[front.oauth]`): listening on 0.0.0.0 without them is refused, as
# everywhere. /healthz and /readyz are for probes (docs/deploy.md).
#
# With a static build already made (cargo build --release --target
# x86_64-unknown-linux-musl), the first stage can be skipped: give the
# directory holding out/mcp-chain and out/etc/ssl/certs/ca-certificates.crt
# as the `build` context (buildah build --build-context build=DIR; no image is
# pulled then).

ARG RUST_IMAGE=docker.io/library/rust:1-alpine

FROM ${RUST_IMAGE} AS build
RUN apk add --no-cache musl-dev ca-certificates
WORKDIR /src
COPY . .
# Alpine's Rust targets musl, linked statically; no debug info in an image.
ENV CARGO_PROFILE_RELEASE_DEBUG=false CARGO_PROFILE_RELEASE_STRIP=true
RUN cargo build --release --locked --bin mcp-chain \
 && mkdir -p /out/etc/ssl/certs \
 && install -m 0755 target/release/mcp-chain /out/mcp-chain \
 && cp /etc/ssl/certs/ca-certificates.crt /out/etc/ssl/certs/

FROM scratch
COPY --from=build /out/ /
# A user with no name and no home: nothing in the image is its own.
USER 65532:65532
ENV MCP_CHAIN_STATE_DIR=/tmp
EXPOSE 8080
ENTRYPOINT ["/mcp-chain"]
CMD ["--listen", "0.0.0.0:8080", "--config", "/etc/mcp-chain/config.toml"]
