# Levee's build and test entry points. `make test` is what CI runs.
# Stamped into the binaries (levee version) and the image labels.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
TAGS ?=
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
# Image names and extra `docker build` flags (the e2e test labels its images).
LEVEE_IMAGE ?= levee:dev
ECHO_IMAGE ?= levee-echo:dev
# The compose demo's private ACME CA: Pebble, Let's Encrypt's test CA, built
# from the Go module proxy (the version the ACME tests run, e2e/pebble_test.go).
PEBBLE_IMAGE ?= levee-pebble:dev
PEBBLE_VERSION ?= v2.10.3
DOCKER_BUILD_FLAGS ?=
# docker-compose (v1) where installed, else the compose plugin.
COMPOSE ?= $(shell command -v docker-compose >/dev/null 2>&1 && echo docker-compose || echo docker compose)

# The compose demo's settings; docker-compose reads .env from this directory.
DEMO_ENV ?= .env
# The socket the demo mounts; its group is what the levee container joins.
DOCKER_SOCK ?= /var/run/docker.sock
# How long make demo waits for the demo route, and how often it asks (s).
DEMO_WAIT ?= 60
DEMO_POLL ?= 1

# make release: the platforms built, and where the binaries go.
RELEASE_PLATFORMS ?= linux/amd64 linux/arm64
DIST ?= dist

.PHONY: test check fuzz build pebble image run demo demo-env demo-wait demo-down release

# test: every pass (formatting and vet, go test -race ./... including the
# real-engine tests, the other three --http-server x --backend-client
# combinations, the bench module), each run even when one before failed;
# full logs in bin/test-logs/, failures named at the end (.ci/passes.sh).
test:
	@bash .ci/passes.sh

# check: the inner loop, in about a minute with no Docker, Redis or
# browser: gofmt, go vet, staticcheck (from the Go module proxy, pinned) and
# the unit tests under -short (tests that need an engine, Redis, a browser,
# Pebble or a TLS scanner skip themselves under -short).
STATICCHECK_VERSION ?= v0.8.2
CHECK_PACKAGES ?= ./breaker/... ./diagnostics/... ./router/... ./provider/... ./api/...
check:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	go vet ./...
	GOFLAGS= go run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...
	go test -short -count=1 $(CHECK_PACKAGES)

# fuzz: every fuzz target for FUZZTIME (default 20s) each; CI runs it after
# the tests. A failing input is written to the package's testdata/fuzz and
# fails the run (and `go test` after it). Go 1.26's fuzz coordinator can
# also fail a target with "context deadline exceeded" at the end of the
# time budget with no failing input (go.dev/issue/75804, fixed in Go 1.27):
# such a run is retried once, and reported, not failed, if it recurs
# without an input.
FUZZTIME ?= 20s
fuzz:
	@set -e; failed=0; \
	for f in $$(grep -rl --include='*_test.go' '^func Fuzz' --exclude-dir=bench . | sort); do \
	  pkg=./$$(dirname $$f); \
	  for name in $$(grep -o '^func Fuzz[A-Za-z0-9_]*' $$f | cut -d' ' -f2); do \
	    for try in 1 2; do \
	      echo "== $$name ($$pkg, $(FUZZTIME), try $$try)"; \
	      before=$$(ls $$pkg/testdata/fuzz/$$name 2>/dev/null | wc -l); \
	      if go test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg; then break; fi; \
	      after=$$(ls $$pkg/testdata/fuzz/$$name 2>/dev/null | wc -l); \
	      if [ "$$after" != "$$before" ]; then echo "FAIL: $$name wrote a failing input to $$pkg/testdata/fuzz/$$name"; failed=1; break; fi; \
	      echo "note: $$name failed without a failing input (go.dev/issue/75804)"; \
	    done; \
	  done; \
	done; \
	exit $$failed

# TAGS=kubernetes links the Kubernetes provider (docs/kubernetes.md).
build:
	CGO_ENABLED=0 go build -trimpath -tags '$(TAGS)' -ldflags '$(LDFLAGS)' -o bin/levee ./cmd/levee
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o bin/echo ./cmd/echo

# pebble: bin/pebble/ for the demo's CA image: a static pebble binary, the
# certificate its ACME directory is served with (its test "localhost" one,
# whose names include "pebble"), the root that signs it (Levee's
# --acme-ca-root), and its config: the validation authority checks HTTP-01
# on port 8080 and TLS-ALPN-01 on 8443, where the demo's Levee listens.
pebble:
	mkdir -p bin/pebble
	CGO_ENABLED=0 GOFLAGS= GOBIN=$(abspath bin/pebble) go install -trimpath github.com/letsencrypt/pebble/v2/cmd/pebble@$(PEBBLE_VERSION)
	@src=$$(GOFLAGS= go mod download -json github.com/letsencrypt/pebble/v2@$(PEBBLE_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p'); \
	[ -n "$$src" ] || { echo "pebble: go mod download found no source of pebble $(PEBBLE_VERSION)" >&2; exit 1; }; \
	install -m 0644 $$src/test/certs/localhost/cert.pem bin/pebble/cert.pem; \
	install -m 0644 $$src/test/certs/localhost/key.pem bin/pebble/key.pem; \
	install -m 0644 $$src/test/certs/pebble.minica.pem bin/pebble/minica.pem
	printf '%s\n' '{"pebble": {"listenAddress": "0.0.0.0:14000", "managementListenAddress": "0.0.0.0:15000",' \
	  '"certificate": "/pebble/cert.pem", "privateKey": "/pebble/key.pem", "httpPort": 8080, "tlsPort": 8443,' \
	  '"ocspResponderURL": "", "retryAfter": {"authz": 1, "order": 1}}}' > bin/pebble/config.json

# image: the levee, echo and pebble images, FROM scratch (no registry needed).
image: build pebble
	cp /etc/ssl/certs/ca-certificates.crt bin/ca-certificates.crt
	mkdir -p bin/levee-state
	docker build $(DOCKER_BUILD_FLAGS) --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) --target echo -t $(ECHO_IMAGE) .
	docker build $(DOCKER_BUILD_FLAGS) --build-arg PEBBLE_VERSION=$(PEBBLE_VERSION) --target pebble -t $(PEBBLE_IMAGE) .
	docker build $(DOCKER_BUILD_FLAGS) --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) --target levee -t $(LEVEE_IMAGE) .

run:
	go run ./cmd/levee

# release: a static levee binary per RELEASE_PLATFORMS entry in $(DIST)/
# (levee-VERSION-OS-ARCH: CGO_ENABLED=0, -trimpath, version and commit
# stamped) and their SHA256SUMS. A tree with uncommitted changes (VERSION
# ends in -dirty) is refused: its binaries could not be rebuilt from a commit.
release:
	@case "$(VERSION)" in *-dirty) echo "release: the tree has uncommitted changes (VERSION=$(VERSION)); commit or stash them" >&2; exit 1;; esac
	rm -rf $(DIST) && mkdir -p $(DIST)
	@set -e; for platform in $(RELEASE_PLATFORMS); do \
	  os=$${platform%/*}; arch=$${platform#*/}; out=$(DIST)/levee-$(VERSION)-$$os-$$arch; \
	  echo "building $$out"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch go build -trimpath -ldflags '$(LDFLAGS)' -o $$out ./cmd/levee; \
	done
	cd $(DIST) && sha256sum levee-* > SHA256SUMS

# demo: the compose demo (docker-compose.yml) with freshly built images;
# done when the demo route answers.
demo: image demo-env
	$(COMPOSE) up -d
	@$(MAKE) -s --no-print-directory demo-wait

# demo-wait: asks http://127.0.0.1:PORT/ with Host: echo.localhost until it
# answers 200, for at most DEMO_WAIT seconds. /ready is not enough: it turns
# 200 once Levee has synced with Docker, while the echo replicas are still
# starting (their HEALTHCHECK has not passed, so the route answers 503
# no-healthy-backend). PORT is what compose publishes: LEVEE_HTTP_PORT from
# the environment, else from $(DEMO_ENV), else 8080.
demo-wait:
	@port=$${LEVEE_HTTP_PORT:-$$(sed -n 's/^LEVEE_HTTP_PORT=//p' $(DEMO_ENV) 2>/dev/null | tail -n 1)}; \
	url=http://127.0.0.1:$${port:-8080}/; \
	echo "waiting up to $(DEMO_WAIT)s for $$url (Host: echo.localhost) to answer 200"; \
	deadline=$$(( $$(date +%s) + $(DEMO_WAIT) )); \
	while :; do \
	  head=$$(curl -s -o /dev/null -m 2 -D - -H 'Host: echo.localhost' "$$url" | tr -d '\r'); \
	  code=$$(printf '%s\n' "$$head" | sed -n '1s/^HTTP[^ ]* \([0-9]*\).*/\1/p'); \
	  if [ "$$code" = 200 ]; then echo "the demo is up: curl -H 'Host: echo.localhost' $$url"; exit 0; fi; \
	  if [ $$(date +%s) -ge $$deadline ]; then \
	    diag=$$(printf '%s\n' "$$head" | sed -n 's/^[Xx]-[Ll]evee-[Dd]iagnostic: *//p'); \
	    echo "the demo did not answer 200 within $(DEMO_WAIT)s: last answer $${code:-none (no connection)} $$diag" >&2; \
	    echo "look at: $(COMPOSE) ps; $(COMPOSE) logs levee" >&2; \
	    exit 1; \
	  fi; \
	  sleep $(DEMO_POLL); \
	done

# demo-down: stops the demo and removes its containers, network and state
# volume (.env and the images stay).
demo-down:
	$(COMPOSE) down -v

# demo-env: writes each setting the demo needs into $(DEMO_ENV) once, and
# never overwrites one that is there: LEVEE_API_TOKEN, a random API token
# (Levee refuses short and placeholder tokens), and DOCKER_GID, the group of
# the Docker socket, which the non-root levee container joins. A new file is
# private (0600).
demo-env:
	@[ -e $(DEMO_ENV) ] || (umask 077 && : > $(DEMO_ENV))
	@[ ! -s $(DEMO_ENV) ] || [ -z "$$(tail -c 1 $(DEMO_ENV))" ] || echo >> $(DEMO_ENV)
	@grep -q '^LEVEE_API_TOKEN=' $(DEMO_ENV) || { \
	  echo "LEVEE_API_TOKEN=$$(head -c 24 /dev/urandom | base64)" >> $(DEMO_ENV) && \
	  echo "$(DEMO_ENV): wrote a random LEVEE_API_TOKEN"; }
	@grep -q '^DOCKER_GID=' $(DEMO_ENV) || { \
	  gid=$$(stat -c %g $(DOCKER_SOCK)) || { echo "demo-env: cannot read the group of $(DOCKER_SOCK); set DOCKER_GID in $(DEMO_ENV)" >&2; exit 1; }; \
	  echo "DOCKER_GID=$$gid" >> $(DEMO_ENV) && echo "$(DEMO_ENV): wrote DOCKER_GID=$$gid (group of $(DOCKER_SOCK))"; }
