# Pebble, Let's Encrypt's test CA, and its challenge test DNS server for
# the ACME end-to-end test (e2e/acme_test.go, issue 13). Built from the Go
# module proxy into a directory of its own, so it never enters Levee's
# go.mod; the test starts its own processes on free ports.
pebble_version=v2.10.3
pebble_dir=$(mktemp -d /tmp/levee-pebble.XXXXXX)
on_exit "rm -rf '$pebble_dir'"
(
  cd "$pebble_dir"
  GOFLAGS= GOBIN="$pebble_dir" go install \
    "github.com/letsencrypt/pebble/v2/cmd/pebble@$pebble_version" \
    "github.com/letsencrypt/pebble/v2/cmd/pebble-challtestsrv@$pebble_version"
  src=$(GOFLAGS= go mod download -json "github.com/letsencrypt/pebble/v2@$pebble_version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  cp -r "$src/test/certs" "$pebble_dir/certs"
  chmod -R u+w "$pebble_dir/certs"
)
export LEVEE_TEST_PEBBLE_DIR=$pebble_dir
echo "pebble $pebble_version in $LEVEE_TEST_PEBBLE_DIR"
