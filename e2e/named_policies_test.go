package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/levee-proxy/levee/e2e/dockertest"
)

// A named policy declared on one container's labels guards the routes of
// two containers that reference it; a route that references a misspelled
// name denies with E007 and its did-you-mean; and when the declaring
// container goes, the other route denies rather than serve unprotected.
func TestDockerNamedPolicies(t *testing.T) {
	cli := dockertest.Require(t)
	image := dockertest.EchoImage(t, cli)
	network := dockertest.Network(t, cli)
	id := dockertest.RunID(t)
	hostA, hostB, hostTypo := "np-a-"+id+".test", "np-b-"+id+".test", "np-typo-"+id+".test"
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	spec := func(name, host, policies string, extra map[string]string) dockertest.Spec {
		labels := map[string]string{
			"levee.enable":                     "true",
			"levee.http." + name + ".host":     host,
			"levee.http." + name + ".policies": policies,
		}
		for k, v := range extra {
			labels[k] = v
		}
		return dockertest.Spec{Image: image, Networks: []string{network}, Env: []string{"ECHO_NAME=" + name}, Labels: labels}
	}

	p := startLevee(t)
	declaring := dockertest.Run(t, cli, spec("alpha", hostA, "office-only", map[string]string{
		"levee.policy.office-only.basicAuth.users": "admin:" + string(hash),
		"levee.policy.office-only.basicAuth.realm": "office",
	}))
	dockertest.Run(t, cli, spec("beta", hostB, "office-only", nil))
	dockertest.Run(t, cli, spec("typo", hostTypo, "office-onyl", nil))

	do := func(host, user, pass string) (int, http.Header, string) {
		req, _ := http.NewRequest(http.MethodGet, p.proxyURL()+"/", nil)
		req.Host = host
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	for _, tc := range []struct{ host, name string }{{hostA, "alpha"}, {hostB, "beta"}} {
		dockertest.Eventually(t, 20*time.Second, func() error {
			code, hdr, _ := do(tc.host, "", "")
			if code != http.StatusUnauthorized || hdr.Get("WWW-Authenticate") != `Basic realm="office", charset="UTF-8"` {
				return fmt.Errorf("%s without credentials: %d %q %q, want 401 with the policy's realm", tc.name, code, hdr.Get("X-Levee-Diagnostic"), hdr.Get("WWW-Authenticate"))
			}
			return nil
		})
		if code, _, body := do(tc.host, "admin", "s3cret"); code != http.StatusOK || !strings.Contains(body, `"`+tc.name+`"`) {
			t.Fatalf("%s with credentials: %d %q", tc.name, code, body)
		}
		if code, hdr, _ := do(tc.host, "admin", "wrong"); code != http.StatusUnauthorized || hdr.Get("X-Levee-Diagnostic") != "unauthorized" {
			t.Fatalf("%s with a wrong password: %d %v", tc.name, code, hdr)
		}
	}

	dockertest.Eventually(t, 20*time.Second, func() error {
		if code, hdr, _ := do(hostTypo, "admin", "s3cret"); code != http.StatusForbidden || hdr.Get("X-Levee-Diagnostic") != "policy-misconfigured" {
			return fmt.Errorf("misspelled reference: %d %q, want 403 policy-misconfigured", code, hdr.Get("X-Levee-Diagnostic"))
		}
		return nil
	})
	line := p.waitLog(10*time.Second, func(l map[string]any) bool { return l["code"] == "E007" && l["value"] == "office-onyl" })
	if hint, _ := line["hint"].(string); !strings.Contains(hint, "office-only") {
		t.Fatalf("E007 line without the did-you-mean: %v", line)
	}

	// The API declares the misspelled name: the route that references it
	// takes the API's policy, and a change to the policy applies at once.
	putPolicy := func(body string) {
		req, _ := http.NewRequest(http.MethodPut, p.apiURL()+"/policies/office-onyl", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/yaml")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
			t.Fatalf("PUT /policies/office-onyl: %d %s", resp.StatusCode, b)
		}
	}
	putPolicy("name: office-onyl\nconfig:\n  ip_allow_list:\n    source_range: 192.0.2.0/24\n")
	dockertest.Eventually(t, 10*time.Second, func() error {
		if code, hdr, _ := do(hostTypo, "", ""); code != http.StatusForbidden || hdr.Get("X-Levee-Diagnostic") != "forbidden-ip" {
			return fmt.Errorf("route of the API policy: %d %q, want 403 forbidden-ip", code, hdr.Get("X-Levee-Diagnostic"))
		}
		return nil
	})
	putPolicy("name: office-onyl\nconfig:\n  ip_allow_list:\n    source_range: [127.0.0.0/8, '::1']\n")
	dockertest.Eventually(t, 10*time.Second, func() error {
		if code, _, body := do(hostTypo, "", ""); code != http.StatusOK || !strings.Contains(body, `"typo"`) {
			return fmt.Errorf("after the policy admits the client: %d %q", code, body)
		}
		return nil
	})
	_, _, list := get(t, p.apiURL()+"/policies/office-only", "")
	if !strings.Contains(list, `"routes":["alpha","beta"]`) || strings.Contains(list, "$2") {
		t.Fatalf("GET /policies/office-only: %s", list)
	}

	// The declaration leaves with its container: the route that still
	// references it denies, it is never served without its auth.
	dockertest.Stop(t, cli, declaring)
	dockertest.Eventually(t, 20*time.Second, func() error {
		if code, hdr, _ := do(hostB, "admin", "s3cret"); code != http.StatusForbidden || hdr.Get("X-Levee-Diagnostic") != "policy-misconfigured" {
			return fmt.Errorf("beta once the policy is gone: %d %q, want 403 policy-misconfigured", code, hdr.Get("X-Levee-Diagnostic"))
		}
		return nil
	})
}

// A named policy written through the API survives kill -9 (it is durable
// before the answer) and still guards the API route that uses it after
// the restart; deleting it makes that route deny.
func TestAPINamedPolicySurvivesKill9(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("hello from backend"))
	}))
	defer backend.Close()
	state := filepath.Join(t.TempDir(), "state.json")
	send := func(p *leveeProc, method, path, body string) int {
		req, _ := http.NewRequest(method, p.apiURL()+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	diagnostic := func(p *leveeProc) (int, string) {
		status, hdr, _ := get(t, p.proxyURL()+"/", "guarded.example.com")
		return status, hdr.Get("X-Levee-Diagnostic")
	}

	p := startLevee(t, "--docker=false", "--state-file", state)
	createEntrypoint(t, p, fmt.Sprintf(`{"name":"guarded","backends":[{"address":"127.0.0.1","port":%s}],
		"config":{"hostnames":["guarded.example.com"],"policies":["guard"]}}`, portOf(t, backend.URL)))
	if status, diag := diagnostic(p); status != http.StatusForbidden || diag != "policy-misconfigured" {
		t.Fatalf("before the policy exists: %d %q, want 403 policy-misconfigured", status, diag)
	}
	if code := send(p, http.MethodPut, "/policies/guard", `{"name":"guard","config":{"ip_allow_list":{"source_range":"192.0.2.0/24"}}}`); code != http.StatusCreated {
		t.Fatalf("PUT /policies/guard = %d", code)
	}
	if status, diag := diagnostic(p); status != http.StatusForbidden || diag != "forbidden-ip" {
		t.Fatalf("with the policy: %d %q, want 403 forbidden-ip", status, diag)
	}
	if err := p.signal(syscall.SIGKILL, 10*time.Second); err == nil {
		t.Fatal("kill -9 should end the process with an error status")
	}

	p2 := startLevee(t, "--docker=false", "--state-file", state)
	if status, diag := diagnostic(p2); status != http.StatusForbidden || diag != "forbidden-ip" {
		t.Fatalf("after the restart: %d %q, want 403 forbidden-ip", status, diag)
	}
	if code := send(p2, http.MethodDelete, "/policies/guard", ""); code != http.StatusNoContent {
		t.Fatalf("DELETE /policies/guard = %d", code)
	}
	if status, diag := diagnostic(p2); status != http.StatusForbidden || diag != "policy-misconfigured" {
		t.Fatalf("after the delete: %d %q, want 403 policy-misconfigured", status, diag)
	}
}

// A named policy declared in a config file guards a file route and an API
// route that reference it; editing the file changes both at once.
func TestFileNamedPolicyGuardsRoutesOfTwoSources(t *testing.T) {
	dir := t.TempDir()
	addr := backendNamed(t, "home")
	h, port, _ := strings.Cut(addr, ":")
	policy := func(ranges string) string {
		return "policies:\n  - name: home-only\n    config:\n      ip_allow_list: {source_range: [" + ranges + "]}\n"
	}
	path := filepath.Join(dir, "home.yaml")
	writeConfigAtomic(t, path, "entrypoints:\n  - name: nas\n    config: {hostnames: [nas.example.com], policies: [home-only]}\n"+
		"    backends: [{address: "+h+", port: "+port+"}]\n"+policy("192.0.2.0/24"))
	p := startLevee(t, "--docker=false", "--config-dir", dir)
	createEntrypoint(t, p, `{"name":"vm","backends":[{"address":"`+h+`","port":`+port+`}],"config":{"hostnames":["vm.example.com"],"policies":"home-only"}}`)

	expect := func(wantStatus int, wantDiag string) {
		t.Helper()
		for _, host := range []string{"nas.example.com", "vm.example.com"} {
			dockertest.Eventually(t, 5*time.Second, func() error {
				status, hdr, _, err := tryGet(p.proxyURL()+"/", host)
				if err != nil {
					return err
				}
				if status != wantStatus || hdr.Get("X-Levee-Diagnostic") != wantDiag {
					return fmt.Errorf("%s: %d %q, want %d %q", host, status, hdr.Get("X-Levee-Diagnostic"), wantStatus, wantDiag)
				}
				return nil
			})
		}
	}
	expect(http.StatusForbidden, "forbidden-ip")
	writeConfigAtomic(t, path, "entrypoints:\n  - name: nas\n    config: {hostnames: [nas.example.com], policies: [home-only]}\n"+
		"    backends: [{address: "+h+", port: "+port+"}]\n"+policy("127.0.0.0/8, '::1'"))
	expect(http.StatusOK, "")
}
