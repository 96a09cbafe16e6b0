# Levee's build and test entry points. `make test` is what CI runs.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
# Image names and extra `docker build` flags (the e2e test labels its images).
LEVEE_IMAGE ?= levee:dev
ECHO_IMAGE ?= levee-echo:dev
DOCKER_BUILD_FLAGS ?=
# docker-compose (v1) where installed, else the compose plugin.
COMPOSE ?= $(shell command -v docker-compose >/dev/null 2>&1 && echo docker-compose || echo docker compose)

.PHONY: test fuzz build image run demo

# test: formatting, vet, and every test (including real-Docker ones) under the race detector.
test:
	@unformatted=$$(gofmt -l .); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	go vet ./...
	@# -v so the log shows every test's verdict (the real-Docker tests ran,
	@# not skipped); the full log is kept and its tail printed on failure.
	@log=$$(mktemp); rc=0; \
	go test -race -timeout 25m -count=1 -v ./... > $$log 2>&1 || rc=$$?; \
	grep -E '^\s*--- (PASS|FAIL|SKIP)|^(ok|FAIL|PASS|panic)|^\s+[A-Za-z0-9_]+_test\.go:[0-9]+:|DATA RACE' $$log; \
	if [ $$rc -ne 0 ]; then echo "--- go test failed ($$rc); last 400 lines of the full log:"; tail -400 $$log; fi; \
	rm -f $$log; exit $$rc
	@# The proxy's suites again on the other three combinations of HTTP
	@# server and backend client (levee serve --http-server, --backend-client),
	@# so that every fallback stays true: the router's tests (LEVEE_TEST_*),
	@# the API's, and the binary's end-to-end tests (LEVEE_* reach the binary;
	@# the compose demo runs once, above). e2e/conformance runs all four itself.
	@for combo in "stdlib levee" "levee stdlib" "stdlib stdlib"; do set -- $$combo; \
	  echo "== --http-server=$$1 --backend-client=$$2"; \
	  LEVEE_TEST_SERVER=$$1 LEVEE_TEST_CLIENT=$$2 LEVEE_HTTP_SERVER=$$1 LEVEE_BACKEND_CLIENT=$$2 \
	    go test -race -count=1 -skip 'TestComposeDemo' ./router ./api ./e2e || exit 1; \
	done
	cd bench && go vet ./... && go test -count=1 ./...

# fuzz: every fuzz target for FUZZTIME (default 20s) each; CI runs it after
# the tests. Crashers land in the package's testdata/fuzz and fail `go test`.
FUZZTIME ?= 20s
fuzz:
	@set -e; grep -rl --include='*_test.go' '^func Fuzz' --exclude-dir=bench . | sort | while read -r f; do \
	  pkg=./$$(dirname $$f); \
	  for name in $$(grep -o '^func Fuzz[A-Za-z0-9_]*' $$f | cut -d' ' -f2); do \
	    echo "== $$name ($$pkg, $(FUZZTIME))"; \
	    go test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

build:
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o bin/levee ./cmd/levee
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o bin/echo ./cmd/echo

# image: the levee and echo images, FROM scratch (no registry needed).
image: build
	cp /etc/ssl/certs/ca-certificates.crt bin/ca-certificates.crt
	docker build $(DOCKER_BUILD_FLAGS) --target echo -t $(ECHO_IMAGE) .
	docker build $(DOCKER_BUILD_FLAGS) --target levee -t $(LEVEE_IMAGE) .

run:
	go run ./cmd/levee

# demo: the compose demo (docker-compose.yml) with freshly built images.
demo: image
	$(COMPOSE) up -d
