package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/levee-proxy/levee/provider/docker"
	"github.com/levee-proxy/levee/provider/labels"
)

func validate(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return validateEnv(t, nil, args...)
}

func validateEnv(t *testing.T, env map[string]string, args ...string) (string, string, int) {
	t.Helper()
	return validateWith(t, testEngine(), env, args...)
}

// testEngine is the live engine's reader except for images: their EXPOSE
// is unknown unless a test gives it, so that no test depends on what the
// machine's engine holds.
func testEngine() engineReader {
	e := liveEngine()
	e.imageExposedPorts = func(context.Context, string, []string) (map[string][]int, error) {
		return nil, errors.New("no engine in tests")
	}
	return e
}

// validateWith runs validate reading the engine through eng.
func validateWith(t *testing.T, eng engineReader, env map[string]string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := runValidate(context.Background(), eng, args, strings.NewReader(""), &out, &errOut, envOf(env))
	return out.String(), errOut.String(), code
}

// The demo compose file at the top of the repository validates as the README
// and docs/getting-started.md say: echo routed, broken degraded with W024,
// exit 0.
func TestValidateTopLevelComposeFile(t *testing.T) {
	out, errOut, code := validate(t, "../../docker-compose.yml")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q, out:\n%s", code, errOut, out)
	}
	if !hasRow(out, "routed", "echo", "echo") || !hasRow(out, "degraded", "broken", "broken") {
		t.Fatalf("want echo routed and broken degraded:\n%s", out)
	}
	if !strings.Contains(out, "W024") || !strings.Contains(out, "levee.http.broken.circuitBreaker.threshold") {
		t.Fatalf("want the deliberate W024 on broken:\n%s", out)
	}
	if strings.Count(out, " warn ") != 1 {
		t.Fatalf("want exactly one warning (the deliberate one):\n%s", out)
	}
}

// LEVEE_LABEL_PREFIX applies to validate as to serve; the flag wins.
func TestValidateReadsLabelPrefixFromEnv(t *testing.T) {
	env := map[string]string{"LEVEE_LABEL_PREFIX": "sozune"}
	out, _, code := validateEnv(t, env, "testdata/sozune.yml")
	if code != 0 || !strings.Contains(out, "routed") {
		t.Fatalf("with LEVEE_LABEL_PREFIX=sozune: exit %d\n%s", code, out)
	}
	out, _, _ = validateEnv(t, env, "--label-prefix", "levee", "testdata/sozune.yml")
	if strings.Contains(out, "routed ") {
		t.Fatalf("--label-prefix levee must win over the env and route nothing:\n%s", out)
	}
	_, errOut, code := validateEnv(t, map[string]string{"LEVEE_DOCKER_EXPOSED_BY_DEFAULT": "perhaps"}, "testdata/good.yml")
	if code != 2 || !strings.Contains(errOut, "LEVEE_DOCKER_EXPOSED_BY_DEFAULT") {
		t.Fatalf("bad env value: exit %d, stderr %q", code, errOut)
	}
}

// rowRe matches a report row: status, container, service.
func hasRow(out, status, container, service string) bool {
	re := regexp.MustCompile(`(?m)^` + status + `\s+` + regexp.QuoteMeta(container) + `\s+` + regexp.QuoteMeta(service) + `\s`)
	return re.MatchString(out)
}

func TestValidateGood(t *testing.T) {
	out, errOut, code := validate(t, "testdata/good.yml")
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s%s", code, out, errOut)
	}
	for _, r := range [][3]string{
		{"routed", "web-1", "web"}, {"routed", "api", "api"}, {"routed", "worker", "jobs"}, {"ignored", "db", "-"},
	} {
		if !hasRow(out, r[0], r[1], r[2]) {
			t.Errorf("no row %v in\n%s", r, out)
		}
	}
	if !strings.Contains(out, "www.example.com,example.com -> web-1:8080") || !strings.Contains(out, "3 routed, 0 degraded, 0 skipped, 1 not enabled") {
		t.Errorf("output:\n%s", out)
	}
	// deploy.labels are a Swarm service's labels, and the report says so.
	if !strings.Contains(out, "jobs.example.com -> worker:8000 [swarm]") || !strings.Contains(out, "deploy.labels, the rows marked [swarm], by the swarm provider (levee serve --swarm)") {
		t.Errorf("deploy.labels not reported as the swarm provider's:\n%s", out)
	}
}

func TestValidateDegraded(t *testing.T) {
	out, _, code := validate(t, "testdata/degraded.yml")
	if code != 0 {
		t.Fatalf("degraded counts as routed: exit %d\n%s", code, out)
	}
	if !hasRow(out, "degraded", "shop", "shop") {
		t.Errorf("no degraded row:\n%s", out)
	}
	for _, want := range []string{
		`W024 warn levee.http.shop.circuitBreaker.threshold="abc"`, "(using 0.5)",
		`W013 warn levee.http.shop.circuitBreaker.minRequest="10"`, "did you mean levee.http.shop.circuitBreaker.minRequests?",
		`W028 warn levee.http.shop.stripPrefix="yep"`,
		"I002 info levee.http.shop.port", "using 8080, the container's only exposed port",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// A route that denies every request because an access policy cannot be
// read (E005, E006) is an error: validate exits 1, in text and JSON.
func TestValidateExitsOneOnErrors(t *testing.T) {
	out, _, code := validate(t, "testdata/lostpolicy.yml")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	for _, r := range [][3]string{{"denies", "admin", "admin"}, {"denies", "ops", "ops"}} {
		if !hasRow(out, r[0], r[1], r[2]) {
			t.Errorf("no row %v in\n%s", r, out)
		}
	}
	for _, want := range []string{"E005 error levee.http.admin.basicAuth.userz", "E006 error levee.http.ops.basicauh.users",
		"0 routed, 0 degraded, 2 denying every request, 0 skipped"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, _, code = validate(t, "--format", "json", "testdata/lostpolicy.yml")
	var rep validateReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 || rep.Summary["denies"] != 2 {
		t.Fatalf("json: exit %d, %v, summary %v", code, err, rep.Summary)
	}
}

// --strict fails on warnings too; infos never fail.
func TestValidateStrict(t *testing.T) {
	for _, c := range []struct {
		file   string
		strict bool
		want   int
	}{
		{"testdata/degraded.yml", false, 0},
		{"testdata/degraded.yml", true, 1},
		{"testdata/good.yml", true, 0},
	} {
		args := []string{c.file}
		if c.strict {
			args = append([]string{"--strict"}, args...)
		}
		if out, _, code := validate(t, args...); code != c.want {
			t.Errorf("validate %v: exit %d, want %d\n%s", args, code, c.want, out)
		}
	}
}

func TestValidateSkipped(t *testing.T) {
	out, _, code := validate(t, "testdata/skipped.yml")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	for _, r := range [][3]string{{"routed", "app", "app"}, {"skipped", "app", "admin"}, {"skipped", "lonely", "-"}} {
		if !hasRow(out, r[0], r[1], r[2]) {
			t.Errorf("no row %v in\n%s", r, out)
		}
	}
	if !strings.Contains(out, "E002 error levee.http.admin.host") || !strings.Contains(out, "E004 error levee.enable") {
		t.Errorf("output:\n%s", out)
	}
}

func TestValidateSozunePrefix(t *testing.T) {
	out, _, code := validate(t, "testdata/sozune.yml", "--label-prefix", "sozune")
	if code != 0 || !hasRow(out, "routed", "whoami", "whoami") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	// With the default prefix nothing in the file is enabled.
	out, _, code = validate(t, "testdata/sozune.yml")
	if code != 0 || !hasRow(out, "ignored", "whoami", "-") {
		t.Errorf("default prefix: exit %d\n%s", code, out)
	}
}

func TestValidateJSON(t *testing.T) {
	out, _, code := validate(t, "--format", "json", "testdata/skipped.yml", "testdata/degraded.yml")
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	var rep validateReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	got := map[string]string{}
	codes := map[string][]string{}
	for _, s := range rep.Services {
		got[s.Container+"/"+s.Service] = s.Status
		for _, d := range s.Diagnostics {
			codes[s.Container+"/"+s.Service] = append(codes[s.Container+"/"+s.Service], string(d.Code))
			if d.Source.Provider != "docker" || d.Source.ObjectName != s.Container {
				t.Errorf("source %+v in row %s", d.Source, s.Container)
			}
		}
	}
	want := map[string]string{"app/app": "routed", "app/admin": "skipped", "lonely/": "skipped", "shop/shop": "degraded"}
	if len(got) != len(want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	if rep.Summary["skipped"] != 2 || rep.Summary["degraded"] != 1 || rep.Summary["routed"] != 1 {
		t.Errorf("summary %v", rep.Summary)
	}
	if strings.Join(codes["app/admin"], ",") != "E002" {
		t.Errorf("app/admin codes %v", codes["app/admin"])
	}
}

func TestValidateUsageErrors(t *testing.T) {
	cases := [][]string{
		{"--format", "xml", "testdata/good.yml"},
		{"--bogus"},
		{"testdata/missing.yml"},
		{"--label-prefix", "a.b", "testdata/good.yml"},
		{"validate_test.go"}, // not a compose file
	}
	for _, args := range cases {
		if _, errOut, code := validate(t, args...); code != 2 || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a message", args, code, errOut)
		}
	}
	if out, errOut, code := validate(t, "-h"); code != 0 || !strings.Contains(errOut+out, "Usage: levee validate") {
		t.Errorf("-h: exit %d", code)
	}
}

func TestValidateLiveEngine(t *testing.T) {
	eng := testEngine()
	eng.listServices = func(context.Context, docker.HostSpec) ([]labels.Container, error) { return nil, nil } // not a manager

	eng.listContainers = nil
	if _, errOut, code := validateWith(t, eng, nil); code != 2 || !strings.Contains(errOut, "cannot read the live Docker engine") {
		t.Errorf("nil listContainers: exit %d, %q", code, errOut)
	}

	var gotHost string
	eng.listContainers = func(_ context.Context, spec docker.HostSpec) ([]labels.Container, error) {
		gotHost = spec.URL
		return []labels.Container{{ID: "abc", Name: "web-1", Labels: map[string]string{
			"levee.enable": "true", "levee.http.web.host": "a.com", "levee.http.web.port": "80"},
			Networks: []labels.Network{{Name: "bridge", IP: "172.17.0.2"}}}}, nil
	}
	out, _, code := validateWith(t, eng, nil, "--docker-host", "tcp://engine:2375")
	if code != 0 || gotHost != "tcp://engine:2375" || !strings.Contains(out, "a.com -> 172.17.0.2:80") {
		t.Errorf("live: exit %d host %q\n%s", code, gotHost, out)
	}

	// On a Swarm manager the services are checked too, marked [swarm],
	// with their diagnostics.
	eng.listServices = func(context.Context, docker.HostSpec) ([]labels.Container, error) {
		net := []labels.Network{{Name: "ingress-net", IP: "10.0.1.2"}}
		return []labels.Container{{ID: "svc1", Name: "shop", Service: true, Networks: net, Labels: map[string]string{
			"levee.enable": "true", "levee.http.shop.host": "shop.com", "levee.http.shop.port": "8080",
			"levee.http.shop.circuitBreaker.threshold": "2"},
			Tasks: []labels.Task{{ID: "t1", Name: "shop.1", Networks: net},
				{ID: "t2", Name: "shop.2", Networks: []labels.Network{{Name: "ingress-net", IP: "10.0.1.3"}}}}}}, nil
	}
	out, _, code = validateWith(t, eng, nil)
	if code != 0 || !strings.Contains(out, "a.com -> 172.17.0.2:80") ||
		!strings.Contains(out, "shop.com -> 10.0.1.2:8080, 10.0.1.3:8080 [swarm]") || !strings.Contains(out, "W024") ||
		!strings.Contains(out, "0 skipped") {
		t.Errorf("live with a Swarm service: exit %d\n%s", code, out)
	}
	eng.listServices = func(context.Context, docker.HostSpec) ([]labels.Container, error) {
		return nil, errors.New("swarm list failed")
	}
	if _, errOut, code := validateWith(t, eng, nil); code != 2 || !strings.Contains(errOut, "Swarm services: swarm list failed") {
		t.Errorf("services error: exit %d, %q", code, errOut)
	}
	eng.listServices = func(context.Context, docker.HostSpec) ([]labels.Container, error) { return nil, nil }

	eng.listContainers = func(context.Context, docker.HostSpec) ([]labels.Container, error) {
		return nil, errors.New("connection refused")
	}
	if _, errOut, code := validateWith(t, eng, nil); code != 2 || !strings.Contains(errOut, "connection refused") {
		t.Errorf("engine error: exit %d, %q", code, errOut)
	}
}

// A Sōzune compose file checked without --label-prefix sozune routes
// nothing; validate says which prefix the file uses.
func TestValidateHintsAtTheLabelPrefix(t *testing.T) {
	out, _, code := validate(t, "testdata/sozune.yml")
	if code != 0 || !strings.Contains(out, `hint: no container is enabled under the prefix "levee"`) ||
		!strings.Contains(out, "try --label-prefix sozune") {
		t.Fatalf("exit %d, want a hint naming --label-prefix sozune:\n%s", code, out)
	}
	out, _, _ = validate(t, "--label-prefix", "sozune", "testdata/sozune.yml")
	if strings.Contains(out, "hint:") {
		t.Fatalf("a hint although services are enabled:\n%s", out)
	}
}

// A compose file written for Traefik: the Traefik-only container is not
// routed, says so once (I003, pointing to docs/migrating.md) and is not a
// failure; the container that also carries Levee labels gets no I003, and
// the prefix hint never suggests --label-prefix traefik.
func TestValidateTraefikLabels(t *testing.T) {
	out, _, code := validate(t, "testdata/traefik.yml")
	if code != 0 || !hasRow(out, "ignored", "whoami", "-") || !hasRow(out, "routed", "app", "app") {
		t.Fatalf("exit %d, want whoami ignored and app routed:\n%s", code, out)
	}
	if strings.Count(out, "I003") != 1 || !strings.Contains(out, `I003 info traefik.enable="true"`) ||
		!strings.Contains(out, "see docs/migrating.md") {
		t.Fatalf("want one I003 for whoami pointing to docs/migrating.md:\n%s", out)
	}
	out, _, code = validate(t, "--label-prefix", "sozune", "testdata/traefik.yml")
	if code != 0 || strings.Count(out, "I003") != 2 || strings.Contains(out, "--label-prefix traefik") {
		t.Fatalf("prefix sozune: exit %d, want two I003 and no prefix hint at traefik:\n%s", code, out)
	}
}

// Told levee serve's listeners (--listen, --http-listen or their LEVEE_*
// variables), validate reports what serve would: a route naming an
// undeclared listener (W046), a TLS route without a TLS listener (W047).
// Not told, it does not judge listeners.
func TestValidateListeners(t *testing.T) {
	out, _, code := validate(t, "testdata/listeners.yml")
	if code != 0 || strings.Contains(out, "W046") || strings.Contains(out, "W047") {
		t.Fatalf("without listeners: exit %d, want 0 and no listener diagnostic:\n%s", code, out)
	}
	for _, args := range [][]string{
		{"--http-listen", ":80", "testdata/listeners.yml"},
		{"--listen", "web=:80", "testdata/listeners.yml"},
	} {
		out, _, code := validate(t, args...)
		if code != 0 || !hasRow(out, "degraded", "shop", "shop") || !hasRow(out, "degraded", "admin", "admin") {
			t.Fatalf("%v: exit %d, want shop and admin degraded:\n%s", args, code, out)
		}
		for _, want := range []string{`W047 warn tls="true"`, "no TLS listener is declared", `W046 warn listeners="internal"`, "declared: web"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: output lacks %q:\n%s", args, want, out)
			}
		}
	}
	env := map[string]string{"LEVEE_LISTEN": "web=:80;websecure=:443,tls;internal=127.0.0.1:9000"}
	out, _, code = validateEnv(t, env, "testdata/listeners.yml")
	if code != 0 || strings.Contains(out, "W046") || strings.Contains(out, "W047") || !hasRow(out, "routed", "shop", "shop") {
		t.Fatalf("with every listener declared (LEVEE_LISTEN): exit %d, want shop and admin routed:\n%s", code, out)
	}
	_, errOut, code := validate(t, "--listen", "web:80", "testdata/listeners.yml")
	if code != 2 || !strings.Contains(errOut, "want name=addr") {
		t.Fatalf("a bad --listen: exit %d, stderr %q; want 2 and the syntax", code, errOut)
	}
}

// levee validate reads a route's backend TLS files as serve would: an
// unreadable CA is W005 naming the file; insecureSkipVerify is W006.
func TestValidateReadsBackendTLSFiles(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "internal-ca.pem")
	compose := filepath.Join(dir, "compose.yml")
	content := `services:
  portainer:
    image: portainer
    labels:
      - "levee.enable=true"
      - "levee.http.admin.host=admin.example.com"
      - "levee.http.admin.port=9443"
      - "levee.http.admin.scheme=https"
      - "levee.http.admin.tls.ca=` + missing + `"
  legacy:
    image: legacy
    labels:
      - "levee.enable=true"
      - "levee.http.legacy.host=legacy.example.com"
      - "levee.http.legacy.port=443"
      - "levee.http.legacy.scheme=https"
      - "levee.http.legacy.tls.insecureSkipVerify=true"
`
	if err := os.WriteFile(compose, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, _ := validate(t, compose)
	for _, want := range []string{"W005", missing, "backend-tls-misconfigured", "W006 warn levee.http.legacy.tls.insecureSkipVerify"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q (stderr %q):\n%s", want, errOut, out)
		}
	}
}
