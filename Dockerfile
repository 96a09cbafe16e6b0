# Levee's images. There is no registry to pull a builder image from, so both
# stages are FROM scratch around static binaries that `make image` compiles
# first (CGO_ENABLED=0, -trimpath, version and commit stamped with -ldflags:
# `docker run --rm levee:dev version` prints them). make image passes the same
# version and commit as build arguments, recorded as OCI labels.
#
#   make image            # builds bin/levee, bin/echo, then levee:dev and levee-echo:dev

# The demo/test backend (cmd/echo).
FROM scratch AS echo
ARG VERSION=dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.title="levee-echo" \
      org.opencontainers.image.version="$VERSION" \
      org.opencontainers.image.revision="$COMMIT"
COPY bin/echo /echo
USER 65532:65532
EXPOSE 8080
# Liveness only (/_echo/state answers 200 whatever the injected failures), so
# that `POST /_echo/fail` shows the circuit breaker rather than a health flap.
HEALTHCHECK --interval=2s --timeout=2s --retries=2 CMD ["/echo", "-healthcheck", "http://127.0.0.1:8080/_echo/state"]
ENTRYPOINT ["/echo"]

# The compose demo's private ACME CA: Pebble, Let's Encrypt's test CA
# (`make pebble` fills bin/pebble/). It keeps nothing on disk: a restart
# makes a new root and forgets every account and order. Never for real
# certificates.
FROM scratch AS pebble
ARG PEBBLE_VERSION=unknown
LABEL org.opencontainers.image.title="levee-pebble" \
      org.opencontainers.image.description="Pebble (github.com/letsencrypt/pebble), the compose demo's test ACME CA" \
      org.opencontainers.image.version="$PEBBLE_VERSION"
COPY bin/pebble/ /pebble/
USER 65532:65532
EXPOSE 14000 15000
# No random sleeps before validating, no nonce rejections: the demo's
# certificate arrives within seconds.
ENV PEBBLE_VA_NOSLEEP=1 \
    PEBBLE_WFE_NONCEREJECT=0
ENTRYPOINT ["/pebble/pebble", "-config", "/pebble/config.json"]

# The proxy. Last, so it is the default target.
FROM scratch AS levee
ARG VERSION=dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.title="levee" \
      org.opencontainers.image.version="$VERSION" \
      org.opencontainers.image.revision="$COMMIT"
COPY bin/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY bin/levee /levee
# Not root: a compromised Levee gets an unprivileged user, and only as much
# of Docker as the socket's group (compose: group_add, see
# docs/operations.md). No /etc/passwd is needed: the binary never looks
# the user up.
USER 65532:65532
# The API state file lives on a volume so API-created entrypoints survive
# container re-creation. The directory belongs to that user, and a new named
# volume mounted here starts as a copy of it, so the user can write the file
# (bin/levee-state is the empty directory make image creates).
COPY --chown=65532:65532 bin/levee-state/ /var/lib/levee/
VOLUME /var/lib/levee
ENV LEVEE_STATE_FILE=/var/lib/levee/state.json \
    LEVEE_LOG_FORMAT=json
EXPOSE 8080 3035
# No shell in the image: the binary probes its own /health.
HEALTHCHECK --interval=10s --timeout=3s --retries=3 CMD ["/levee", "health"]
ENTRYPOINT ["/levee"]
CMD ["serve"]
