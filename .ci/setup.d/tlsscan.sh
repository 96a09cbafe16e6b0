# The TLS scanners of e2e/tlsscan (issue 13): testssl.sh from Debian's
# package, and h2spec (the HTTP/2 conformance suite) built from the Go
# module proxy into a directory of its own, so it never enters Levee's
# go.mod. v2.2.1 has no go.mod of its own, hence +incompatible.
h2spec_version=v2.2.1+incompatible
if ! command -v testssl >/dev/null 2>&1 && ! command -v testssl.sh >/dev/null 2>&1; then
  apt_install testssl.sh
fi
h2spec_dir=$(mktemp -d /tmp/levee-h2spec.XXXXXX)
on_exit "rm -rf '$h2spec_dir'"
(cd "$h2spec_dir" && CGO_ENABLED=0 GOFLAGS= GOBIN="$h2spec_dir" go install "github.com/summerwind/h2spec/cmd/h2spec@$h2spec_version")
export LEVEE_TEST_H2SPEC=$h2spec_dir/h2spec
echo "h2spec $h2spec_version in $h2spec_dir; $(command -v testssl || command -v testssl.sh)"
