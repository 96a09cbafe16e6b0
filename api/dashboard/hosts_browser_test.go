package dashboard_test

import (
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/e2e/browsertest"
	"github.com/levee-proxy/levee/e2e/leveetest"
)

// closedAddr is a loopback address nothing listens on: a Docker host
// there is never reached.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// With several Docker hosts, the overview's Docker card lists each host
// with its own provider's state (docker/<host> in /ready), and counts the
// hosts that are up. Two hosts no engine answers at: neither is up, and
// each is listed with its state as /ready gives it.
func TestDashboardDockerHosts(t *testing.T) {
	b := browsertest.Start(t)
	proc := leveetest.Start(t, leveeBinary, leveetest.Options{Args: []string{
		"--docker-host", "edge1=tcp://" + closedAddr(t), "--docker-host", "edge2=tcp://" + closedAddr(t),
		"--api-token", adminToken, "--api-read-token", readToken,
		"--state-file", filepath.Join(t.TempDir(), "state.json"),
	}})
	f := &fixture{proc: proc, base: "http://" + proc.APIAddr + "/dashboard/"}

	// What /ready says of each host, once both have a state.
	states := map[string]string{}
	deadline := time.Now().Add(pageTimeout)
	for len(states) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("/ready never listed docker/edge1 and docker/edge2: %v", states)
		}
		states = readyStates(t, f)
		if len(states) < 2 {
			time.Sleep(50 * time.Millisecond) // polling the API, with a deadline
		}
	}
	for host, st := range states {
		if st == "connected" {
			t.Fatalf("host %s %s, want it not connected: nothing listens there", host, st)
		}
	}

	tab := signIn(t, b, f, "overview", readToken)
	waitJS(t, tab, pageTimeout, `document.querySelectorAll('#ov-docker li[data-host]').length === 2`)
	if title := evalString(t, tab, `document.querySelector('#ov-docker h3').textContent`); title != "Docker hosts" {
		t.Errorf("card title %q, want Docker hosts", title)
	}
	if big := evalString(t, tab, `document.querySelector('#ov-docker .big').textContent`); big != "0 of 2 hosts up" {
		t.Errorf("card says %q, want 0 of 2 hosts up", big)
	}
	for _, host := range []string{"edge1", "edge2"} {
		li := evalString(t, tab, `document.querySelector('#ov-docker li[data-host="`+host+`"]').textContent`)
		if !strings.HasPrefix(li, host+": ") {
			t.Errorf("host line %q, want it to start with %s: ", li, host)
		}
		// The page read /ready when it loaded; the state may have moved
		// on since (connecting, then disconnected), never to connected.
		if strings.Contains(li, "connected") && !strings.Contains(li, "disconnected") {
			t.Errorf("host line %q shows %s connected", li, host)
		}
	}
}

// readyStates is each docker/<host> provider's state in /ready.
func readyStates(t *testing.T, f *fixture) map[string]string {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+f.proc.APIAddr+"/ready", nil)
	req.Header.Set("Authorization", "Bearer "+readToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Providers []struct{ Name, State string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range r.Providers {
		if host, ok := strings.CutPrefix(p.Name, "docker/"); ok && p.State != "" {
			out[host] = p.State
		}
	}
	return out
}
