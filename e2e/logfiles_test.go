package e2e

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// combinedLine is one Combined Log Format line of a request to /n.
var combinedLine = regexp.MustCompile(`^127\.0\.0\.1 - - \[[^]]+\] "GET /(\w+) HTTP/1\.1" 200 2 "https://ref\.test/" "e2e \\"agent\\""$`)

// pathsIn returns the request paths of the Combined lines in file, failing
// on any other line.
func pathsIn(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if l == "" {
			continue
		}
		m := combinedLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("%s: not the expected Combined line: %q", file, l)
		}
		out = append(out, m[1])
	}
	return out
}

// waitPaths polls file until it holds exactly want's paths.
func waitPaths(t *testing.T, file string, want ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := pathsIn(t, file)
		if strings.Join(got, ",") == strings.Join(want, ",") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %v, want %v", file, got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The access log goes to its file in Combined Log Format; after logrotate's
// rename and SIGUSR1, new lines go to a new file at the same path.
func TestAccessLogFileRotatedBySIGUSR1(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer backend.Close()
	file := filepath.Join(t.TempDir(), "access.log")
	p := startLevee(t, "--docker=false", "--access-log-file", file, "--access-log-format=combined")
	createEntrypoint(t, p, fmt.Sprintf(`{"name":"logged","config":{"hostnames":["logged.test"]},"backends":[{"address":"127.0.0.1","port":%s}]}`, portOf(t, backend.URL)))

	send := func(path string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, p.proxyURL()+"/"+path, nil)
		req.Host = "logged.test"
		req.Header.Set("Referer", "https://ref.test/")
		req.Header.Set("User-Agent", `e2e "agent"`)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/%s: %d", path, resp.StatusCode)
		}
	}
	send("one")
	send("two")
	waitPaths(t, file, "one", "two")

	rotated := file + ".1"
	if err := os.Rename(file, rotated); err != nil {
		t.Fatal(err)
	}
	send("three") // before the signal: still the renamed file
	waitPaths(t, rotated, "one", "two", "three")
	if err := p.Send(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	p.waitLog(10*time.Second, func(l map[string]any) bool { return l["message"] == "log files reopened" })
	send("four")
	waitPaths(t, file, "four")
	waitPaths(t, rotated, "one", "two", "three")
	if err := p.Exited(); err != nil {
		t.Fatal(err)
	}
	for _, l := range p.RawLines() {
		if strings.Contains(l, `"event":"access"`) {
			t.Fatalf("access line on stdout: %s", l)
		}
	}
}

// A log file that cannot be opened stops the start with an error naming
// the flag and the path.
func TestUnopenableLogFileFailsStart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "no-such-dir", "levee.log")
	cmd := exec.Command(leveeBinary, "serve", "--docker=false", "--http-listen", "127.0.0.1:0", "--api-listen", "127.0.0.1:0", "--log-file", file)
	cmd.Env = append(os.Environ(), "LEVEE_STATE_FILE="+filepath.Join(t.TempDir(), "state.json"))
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1; output %s", err, out)
	}
	if !strings.Contains(string(out), "--log-file (LEVEE_LOG_FILE)") || !strings.Contains(string(out), file) {
		t.Fatalf("output %q does not name the flag and the path", out)
	}
}
