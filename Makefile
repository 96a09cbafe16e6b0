# Levee's build and test entry points. `make test` is what CI runs.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: test build image run

# test: formatting, vet, and every test (including real-Docker ones) under the race detector.
test:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	go vet ./...
	go test -race -timeout 25m -count=1 ./...
	cd bench && go vet ./... && go test -count=1 ./...

build:
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o bin/levee ./cmd/levee
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o bin/echo ./cmd/echo

run:
	go run ./cmd/levee
