package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fileChangeDeadline bounds how long a change to a config file may take to
// reach the routes. The provider applies one 100ms after its event; the
// rest is margin for a loaded machine running the race-enabled binary.
const fileChangeDeadline = 2 * time.Second

// fileEntrypoint is a config file entry routing host to addr (host:port).
func fileEntrypoint(name, host, addr string) string {
	h, p, _ := strings.Cut(addr, ":")
	return fmt.Sprintf("  - name: %s\n    config: {hostnames: [%s]}\n    backends: [{address: %s, port: %s}]\n", name, host, h, p)
}

// writeConfigAtomic writes a config file as deploy tools do: a temp file
// renamed over the name.
func writeConfigAtomic(t *testing.T, path, body string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// backendNamed answers every request with its name.
func backendNamed(t *testing.T, name string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, name)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// Routes from files through the binary, with no Docker: while a load loop
// sends requests to file A's route, file B is added, changed, broken (W037
// naming the line; B's last good route still served), fixed and removed,
// and an API entrypoint claims A's host (a W018 collision: A, the older,
// keeps it). Every change shows within fileChangeDeadline, and not one
// request to A's route fails.
func TestFileProviderChangesUnderLoad(t *testing.T) {
	dir := t.TempDir()
	addrA, addrB := backendNamed(t, "backend-a"), backendNamed(t, "backend-b")
	fileA, fileB := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	writeConfigAtomic(t, fileA, "entrypoints:\n"+fileEntrypoint("a", "a.file.test", addrA))
	p := startLevee(t, "--docker=false", "--config-dir", dir)

	// observe waits until GET host answers want (a status, and the body
	// when given) and returns how long that took.
	observe := func(what, host string, want int, body string) {
		t.Helper()
		start := time.Now()
		var last string
		for time.Since(start) < fileChangeDeadline {
			code, _, got, err := tryGet(p.proxyURL()+"/", host)
			if err == nil && code == want && (body == "" || got == body) {
				t.Logf("%s: seen after %s", what, time.Since(start).Round(time.Millisecond))
				return
			}
			last = fmt.Sprintf("%d %q %v", code, got, err)
		}
		t.Fatalf("%s: GET %s after %s: %s, want %d %q", what, host, fileChangeDeadline, last, want, body)
	}
	observe("file A", "a.file.test", http.StatusOK, "backend-a")

	var sent, failed atomic.Int64
	var firstFailure atomic.Value
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		client := &http.Client{Timeout: 5 * time.Second}
		for ctx.Err() == nil {
			req, _ := http.NewRequest(http.MethodGet, p.proxyURL()+"/", nil)
			req.Host = "a.file.test"
			resp, err := client.Do(req)
			sent.Add(1)
			if err != nil {
				failed.Add(1)
				firstFailure.CompareAndSwap(nil, err.Error())
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || string(b) != "backend-a" {
				failed.Add(1)
				firstFailure.CompareAndSwap(nil, fmt.Sprintf("%d %q", resp.StatusCode, b))
			}
		}
	}()
	defer func() { stop(); wg.Wait() }()

	writeConfigAtomic(t, fileB, "entrypoints:\n"+fileEntrypoint("b", "b1.file.test", addrB))
	observe("B added", "b1.file.test", http.StatusOK, "backend-b")

	// In place, as an editor without atomic saves writes.
	if err := os.WriteFile(fileB, []byte("entrypoints:\n"+fileEntrypoint("b", "b2.file.test", addrB)), 0o644); err != nil {
		t.Fatal(err)
	}
	observe("B changed", "b2.file.test", http.StatusOK, "backend-b")
	observe("B's old host gone", "b1.file.test", http.StatusNotFound, "")

	broken := "entrypoints:\n" + fileEntrypoint("b", "b3.file.test", addrB) + "  - name: [unclosed\n"
	writeConfigAtomic(t, fileB, broken)
	line := p.waitLog(fileChangeDeadline, func(l map[string]any) bool {
		return l["code"] == "W037" && l["object"] == fileB
	})
	if line["key"] != "line 5" || !strings.Contains(fmt.Sprint(line["message"]), "malformed YAML") {
		t.Fatalf("W037 log line %v: want the file's line 5", line)
	}
	if code, _, body := get(t, p.proxyURL()+"/", "b2.file.test"); code != http.StatusOK || body != "backend-b" {
		t.Fatalf("B broken: its last good route answers %d %q", code, body)
	}
	if code, _, _ := get(t, p.proxyURL()+"/", "b3.file.test"); code != http.StatusNotFound {
		t.Fatalf("B broken: the broken version's host answers %d", code)
	}

	writeConfigAtomic(t, fileB, "entrypoints:\n"+fileEntrypoint("b", "b4.file.test", addrB))
	observe("B fixed", "b4.file.test", http.StatusOK, "backend-b")
	p.waitLog(fileChangeDeadline, func(l map[string]any) bool {
		return l["event"] == "diagnostic_resolved" && l["code"] == "W037"
	})

	if err := os.Remove(fileB); err != nil {
		t.Fatal(err)
	}
	// A removed route answers 503 for --route-grace, as a container's does.
	observe("B removed", "b4.file.test", http.StatusServiceUnavailable, "")

	// An API entrypoint on A's host: the router's collision rule for any
	// two sources, W018 on both, the older (file A) keeps serving.
	payload := fmt.Sprintf(`{"name":"clash","config":{"hostnames":["a.file.test"]},"backends":[{"address":%q,"port":%s}]}`,
		strings.Split(addrB, ":")[0], strings.Split(addrB, ":")[1])
	resp, err := http.Post(p.apiURL()+"/entrypoints", "application/json", bytes.NewBufferString(payload))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /entrypoints: %d", resp.StatusCode)
	}
	for _, who := range []string{"a@file", "clash"} {
		p.waitLog(fileChangeDeadline, func(l map[string]any) bool {
			return l["code"] == "W018" && (l["object"] == strings.TrimSuffix(who, "@file"))
		})
	}
	if code, _, body := get(t, p.proxyURL()+"/", "a.file.test"); code != http.StatusOK || body != "backend-a" {
		t.Fatalf("collision: a.file.test answers %d %q, want file A's backend", code, body)
	}
	status, _, body := get(t, p.apiURL()+"/entrypoints/a@file", "")
	if status != http.StatusOK || !strings.Contains(body, `"source":"file"`) || !strings.Contains(body, `"W018"`) {
		t.Fatalf("GET /entrypoints/a@file: %d %s", status, body)
	}
	req, _ := http.NewRequest(http.MethodDelete, p.apiURL()+"/entrypoints/a@file", nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("DELETE a file entrypoint through the API: %d, want 403", resp.StatusCode)
	}

	stop()
	wg.Wait()
	if n := failed.Load(); n != 0 {
		t.Fatalf("%d of %d requests to file A's route failed; first: %v", n, sent.Load(), firstFailure.Load())
	}
	if sent.Load() < 20 {
		t.Fatalf("only %d requests sent during the changes", sent.Load())
	}
	t.Logf("%d requests to file A's route during the changes, none failed", sent.Load())
}
