package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// namedBinary is BIND's named: $LEVEE_TEST_NAMED (CI sets it,
// .ci/setup.d/bind9.sh), else named on the PATH or in /usr/sbin. Without
// it the test skips, or fails under CI.
func namedBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: this test needs BIND's named")
	}
	if p := os.Getenv("LEVEE_TEST_NAMED"); p != "" {
		return p
	}
	if p, err := exec.LookPath("named"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/named"); err == nil {
		return "/usr/sbin/named"
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("BIND's named is needed under CI (.ci/setup.d/bind9.sh installs bind9 and sets LEVEE_TEST_NAMED)")
	}
	t.Skip("BIND's named not found (apt-get install bind9, or set LEVEE_TEST_NAMED)")
	return ""
}

// namedServer is a named authoritative for one zone, on a loopback port,
// that takes dynamic updates (RFC 2136) of TXT records signed with its
// TSIG key (RFC 8945).
type namedServer struct {
	addr          string // 127.0.0.1:port, UDP and TCP
	zone, keyName string
	keySecret     string // base64
	// readOnlyKey is a second key the server knows but whose updates
	// its policy refuses (REFUSED, RFC 2136 3.3).
	readOnlyKeyName, readOnlyKeySecret string
}

// newTSIGSecret is a random HMAC-SHA256 key, base64 (as tsig-keygen makes).
func newTSIGSecret(t *testing.T) string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// keyClause is the key as BIND's configuration (and tsig-keygen) writes it.
func keyClause(name, secret string) string {
	return fmt.Sprintf("key %q {\n\talgorithm hmac-sha256;\n\tsecret %q;\n};\n", name, secret)
}

// startNamed runs named in the foreground (-g: logs on stderr) with its
// configuration, zone and journal in a temporary directory. It is killed
// when the test ends, and by the kernel if the test process dies first
// (Pdeathsig); its own process group keeps a terminal's signals off it.
func startNamed(t *testing.T, bin, zone string) *namedServer {
	t.Helper()
	dir := t.TempDir()
	ns := &namedServer{addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), zone: zone, keyName: "levee-test", keySecret: newTSIGSecret(t),
		readOnlyKeyName: "levee-read-only", readOnlyKeySecret: newTSIGSecret(t)}
	_, port, _ := net.SplitHostPort(ns.addr)
	conf := fmt.Sprintf(`options {
	directory %q;
	listen-on port %s { 127.0.0.1; };
	listen-on-v6 { none; };
	pid-file %q;
	session-keyfile none;
	managed-keys-directory %q;
	recursion no;
	dnssec-validation no;
	notify no;
};
controls { };
%s
%s
zone %q {
	type primary;
	file "zone.db";
	update-policy { grant %s zonesub TXT; };
};
`, dir, port, filepath.Join(dir, "named.pid"), dir, keyClause(ns.keyName, ns.keySecret), keyClause(ns.readOnlyKeyName, ns.readOnlyKeySecret), zone, ns.keyName)
	db := fmt.Sprintf("$TTL 60\n@ IN SOA ns1.%[1]s. hostmaster.%[1]s. 1 60 60 600 60\n@ IN NS ns1.%[1]s.\nns1 IN A 127.0.0.1\n", zone)
	for name, content := range map[string]string{"named.conf": conf, "zone.db": db} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "-g", "-4", "-n", "1", "-c", filepath.Join(dir, "named.conf"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	startProcess(t, cmd)
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{Timeout: time.Second}).DialContext(ctx, network, ns.addr)
	}}
	waitFor(t, "named answering for "+zone, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		addrs, err := r.LookupHost(ctx, "ns1."+zone)
		if err == nil && (len(addrs) != 1 || addrs[0] != "127.0.0.1") {
			err = fmt.Errorf("ns1.%s is %v", zone, addrs)
		}
		return err
	})
	return ns
}
