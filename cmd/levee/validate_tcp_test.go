package main

import (
	"strings"
	"testing"
)

// TCP services validate as HTTP ones: a TCP route is routed by listener,
// its HTTP fields are W093, bad values W092, no listener E008 (exit 1),
// and given serve's listeners an undeclared one is W095.
func TestValidateTCPServices(t *testing.T) {
	out, errOut, code := validate(t, "--listen", "postgres=:5432,tcp", "testdata/tcp.yml")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (E008)\n%s%s", code, out, errOut)
	}
	if !hasRow(out, "degraded", "db", "pg") || !hasRow(out, "skipped", "bad", "x") {
		t.Errorf("rows:\n%s", out)
	}
	for _, want := range []string{
		`W093 warn levee.tcp.pg.host="db.example.com"`,
		`W092 warn levee.tcp.pg.idleTimeout="forever"`, "(using 10m0s)",
		"E008 error levee.tcp.x.listener",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "W095") {
		t.Errorf("W095 for a declared TCP listener:\n%s", out)
	}
	out, _, _ = validate(t, "--listen", "web=:80", "testdata/tcp.yml")
	if !strings.Contains(out, `W095 warn listener="postgres"`) {
		t.Errorf("no W095 for an undeclared listener:\n%s", out)
	}
}
