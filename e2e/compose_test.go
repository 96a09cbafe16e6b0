package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/levee-proxy/levee/e2e/dockertest"
)

// compose runs docker-compose for one project. The test uses the top-level
// docker-compose.yml unchanged, with images and ports parametrised through
// the environment variables the file documents.
type compose struct {
	t       *testing.T
	root    string
	project string
	env     []string
}

func (c *compose) cmd(ctx context.Context, args ...string) *exec.Cmd {
	bin, pre := composeCommand()
	cmd := exec.CommandContext(ctx, bin, append(append(pre, "-p", c.project, "-f", filepath.Join(c.root, "docker-compose.yml")), args...)...)
	cmd.Dir = c.root
	cmd.Env = append(os.Environ(), c.env...)
	return cmd
}

func (c *compose) run(args ...string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := c.cmd(ctx, args...).CombinedOutput()
	if err != nil {
		c.t.Fatalf("docker-compose %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// composeCommand prefers the docker-compose binary, else the compose plugin.
func composeCommand() (string, []string) {
	if _, err := exec.LookPath("docker-compose"); err == nil {
		return "docker-compose", nil
	}
	return "docker", []string{"compose"}
}

// socketGroup is the group id of the Docker socket the compose file mounts:
// the levee container runs as a non-root user that joins it (group_add).
func socketGroup(t *testing.T, path string) string {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatalf("the compose demo mounts %s: %v", path, err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		t.Fatalf("%s: no owner information on this system", path)
	}
	return strconv.FormatUint(uint64(sys.Gid), 10)
}

// freePort returns a TCP port free on 127.0.0.1, for a process the test
// starts and must tell its port (Pebble, bind9, a listener of levee serve).
func freePort(t *testing.T) int {
	t.Helper()
	// Below the kernel's ephemeral range: a port from that range can be
	// handed to another test's outgoing connection or :0 listener between
	// this check and the bind of the process told to use it.
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				low = v
			}
		}
	}
	const base = 10000
	for range 200 {
		port := base + rand.IntN(max(low-base, 1000))
		if _, taken := handedPorts.LoadOrStore(port, true); taken {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		_ = l.Close()
		return port
	}
	t.Fatal("no free TCP port below the ephemeral range in 200 tries")
	return 0
}

// handedPorts are the ports freePort handed out in this test binary.
var handedPorts sync.Map

func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

type apiClient struct {
	base, token string
}

func (a apiClient) do(t *testing.T, method, path, contentType, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, a.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// metricValue finds `name{labels} value` in a Prometheus text exposition.
func metricValue(exposition, name, labels string) (float64, bool) {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name+"{"+labels+"}") + ` (\S+)$`)
	m := re.FindStringSubmatch(exposition)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}

// echoIPs returns the addresses of the compose project's echo replicas, so
// the test can steer them directly (fail/ok) even while Levee's breaker is
// open and shields them.
func echoIPs(t *testing.T, cli *client.Client, project string) []string {
	t.Helper()
	list, err := cli.ContainerList(context.Background(), client.ContainerListOptions{Filters: make(client.Filters).Add("label", "com.docker.compose.project="+project).Add("label", "com.docker.compose.service=echo")})
	if err != nil {
		t.Fatal(err)
	}
	var ips []string
	for _, c := range list.Items {
		for _, n := range c.NetworkSettings.Networks {
			if n.IPAddress.IsValid() {
				ips = append(ips, n.IPAddress.String())
				break
			}
		}
	}
	if len(ips) != 2 {
		t.Fatalf("want 2 echo replicas with an address, got %v", ips)
	}
	return ips
}

// leveeUser is the user the project's levee container runs as, and the
// groups it was added to.
func leveeUser(t *testing.T, cli *client.Client, project string) (string, []string) {
	t.Helper()
	list, err := cli.ContainerList(context.Background(), client.ContainerListOptions{Filters: make(client.Filters).Add("label", "com.docker.compose.project="+project).Add("label", "com.docker.compose.service=levee")})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("want 1 levee container, got %d", len(list.Items))
	}
	r, err := cli.ContainerInspect(context.Background(), list.Items[0].ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r.Container.Config.User, r.Container.HostConfig.GroupAdd
}

// composePebbleRoots is the root the demo's Pebble issues under, from its
// management interface (127.0.0.1:port, published by the compose file),
// whose own certificate is signed by Pebble's test root (bin/pebble/minica.pem).
func composePebbleRoots(t *testing.T, port int) *x509.CertPool {
	t.Helper()
	minica, err := os.ReadFile(filepath.Join(moduleRoot(t), "bin", "pebble", "minica.pem"))
	if err != nil {
		t.Fatalf("make image writes Pebble's test root: %v", err)
	}
	trust := x509.NewCertPool()
	trust.AppendCertsFromPEM(minica)
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: trust}}}
	var root []byte
	dockertest.Eventually(t, 30*time.Second, func() error {
		resp, err := c.Get(fmt.Sprintf("https://127.0.0.1:%d/roots/0", port))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if root, err = io.ReadAll(resp.Body); err != nil || resp.StatusCode != 200 {
			return fmt.Errorf("GET /roots/0 = %d %v", resp.StatusCode, err)
		}
		return nil
	})
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(root) {
		t.Fatalf("no PEM root from the demo's Pebble: %q", root)
	}
	return pool
}

func post(t *testing.T, url string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Post(url, "text/plain", nil)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s: %s", url, resp.Status)
	}
}

// The compose demo, end to end on the real engine: build, up, both replicas
// routed, the deliberate W024 visible in `docker-compose logs levee` as
// JSON, breaker opens on failures and closes after recovery, an API-created
// entrypoint is routed and survives a restart of the levee container.
func TestComposeDemo(t *testing.T) {
	cli := dockertest.Require(t)
	if bin, _ := composeCommand(); bin == "docker" {
		if err := exec.Command("docker", "compose", "version").Run(); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatal("neither docker-compose nor the docker compose plugin is installed")
			}
			t.Skip("neither docker-compose nor the docker compose plugin is installed")
		}
	}
	root := moduleRoot(t)
	id := dockertest.RunID(t)
	httpPort, httpsPort, apiPort, pebblePort := freePort(t), freePort(t), freePort(t), freePort(t)
	c := &compose{t: t, root: root, project: dockertest.ComposeProjectPrefix + id, env: []string{
		"LEVEE_IMAGE=levee:e2e-" + id,
		"ECHO_IMAGE=levee-echo:e2e-" + id,
		"PEBBLE_IMAGE=levee-pebble:e2e-" + id,
		"LEVEE_HTTP_PORT=" + strconv.Itoa(httpPort),
		"LEVEE_HTTPS_PORT=" + strconv.Itoa(httpsPort),
		"LEVEE_API_PORT=" + strconv.Itoa(apiPort),
		"LEVEE_PEBBLE_PORT=" + strconv.Itoa(pebblePort),
		"LEVEE_API_TOKEN=e2e-api-token-" + id,
		"DOCKER_GID=" + socketGroup(t, "/var/run/docker.sock"),
	}}
	// The demo keeps to its own project, so that another one on the
	// engine (a `make demo` left up, below) changes nothing it shows.
	c.env = append(c.env, "LEVEE_DOCKER_CONSTRAINTS="+fmt.Sprintf("Label(%q,%q)", "com.docker.compose.project", c.project))

	// Build exactly as the README says (make image), with run-labelled tags
	// so that cleanup removes them.
	mk := exec.Command("make", "image", "LEVEE_IMAGE=levee:e2e-"+id, "ECHO_IMAGE=levee-echo:e2e-"+id, "PEBBLE_IMAGE=levee-pebble:e2e-"+id,
		"DOCKER_BUILD_FLAGS=--label "+dockertest.Label+"="+id)
	mk.Dir = root
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if t.Failed() {
			out, _ := c.cmd(ctx, "logs", "--no-color", "levee").CombinedOutput()
			t.Logf("docker-compose logs levee:\n%s", out)
		}
		if out, err := c.cmd(ctx, "down", "-v", "--remove-orphans").CombinedOutput(); err != nil {
			t.Errorf("docker-compose down -v: %v\n%s", err, out)
		}
	})
	// Another project's demo containers, as `make demo` leaves them: the
	// same hosts, the same breaker and the same W024.
	otherProject := c.project + "-other"
	for _, svc := range []struct{ name, host string }{{"echo", "echo.localhost"}, {"broken", "broken.localhost"}} {
		labels := map[string]string{"com.docker.compose.project": otherProject, "com.docker.compose.service": svc.name,
			"levee.enable": "true", "levee.http." + svc.name + ".host": svc.host, "levee.http." + svc.name + ".port": "8080",
			"levee.http." + svc.name + ".circuitBreaker.threshold": map[string]string{"echo": "0.5", "broken": "lots"}[svc.name]}
		dockertest.Run(t, cli, dockertest.Spec{Image: "levee-echo:e2e-" + id, Name: otherProject + "_" + svc.name + "_1", Labels: labels,
			Env: []string{"ECHO_NAME=" + otherProject}})
	}
	c.run("up", "-d", "--no-build")

	api := apiClient{base: fmt.Sprintf("http://127.0.0.1:%d", apiPort), token: "e2e-api-token-" + id}
	proxy := fmt.Sprintf("http://127.0.0.1:%d/", httpPort)
	dockertest.Eventually(t, 60*time.Second, func() error {
		if status, body := api.do(t, "GET", "/ready", "", ""); status != 200 {
			return fmt.Errorf("/ready = %d %s", status, body)
		}
		return nil
	})

	// Levee is not root: it reads the engine through the socket's group
	// (the routes below) and writes its state file on the named volume
	// (the API entrypoint that survives the restart at the end).
	if user, groups := leveeUser(t, cli, c.project); user != "65532:65532" || !slices.Contains(groups, socketGroup(t, "/var/run/docker.sock")) {
		t.Errorf("levee runs as %q with extra groups %v, want 65532:65532 in the Docker socket's group", user, groups)
	}

	// Both replicas are reached through Levee.
	hostnames := map[string]bool{}
	dockertest.Eventually(t, 60*time.Second, func() error {
		status, hdr, body, err := tryGet(proxy, "echo.localhost")
		if err != nil {
			return err
		}
		if strings.Contains(body, otherProject) {
			t.Fatalf("echo.localhost answered by the other project's container: %s", body)
		}
		if status != 200 {
			return fmt.Errorf("echo.localhost = %d %s", status, hdr.Get("X-Levee-Diagnostic"))
		}
		hostnames[hdr.Get("X-Echo-Hostname")] = true
		if len(hostnames) < 2 {
			return fmt.Errorf("replicas seen: %v", hostnames)
		}
		return nil
	})

	// The HTTPS route: HTTP/2 with a certificate the demo's private CA
	// (Pebble) issued by ACME, verified against the root Pebble hands out,
	// and plain HTTP redirected to it. A first order that found Pebble not
	// yet listening is retried after a minute (certmagic's backoff).
	roots := composePebbleRoots(t, pebblePort)
	dockertest.Eventually(t, 150*time.Second, func() error {
		resp, err := httpsClient(fmt.Sprintf("127.0.0.1:%d", httpsPort), roots).Get("https://secure.localhost/")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
			return fmt.Errorf("https://secure.localhost/ = %d %s", resp.StatusCode, resp.Proto)
		}
		return nil
	})
	var certs struct {
		Certificates []struct{ Host, Source, Issuer string } `json:"certificates"`
	}
	status, body := api.do(t, "GET", "/certificates", "", "")
	if err := json.Unmarshal(body, &certs); status != 200 || err != nil {
		t.Fatalf("GET /certificates = %d %s", status, body)
	}
	if i := slices.IndexFunc(certs.Certificates, func(c struct{ Host, Source, Issuer string }) bool {
		return c.Host == "secure.localhost"
	}); i < 0 || certs.Certificates[i].Source != "acme" || !strings.HasPrefix(certs.Certificates[i].Issuer, "Pebble") {
		t.Errorf("GET /certificates = %s, want secure.localhost from acme, issued by Pebble", body)
	}
	// The redirect names the port the demo publishes the TLS listener on
	// (LEVEE_HTTPS_PORT, the listener's public-port), not its port in the
	// container (8443).
	redirect, _ := http.NewRequest(http.MethodGet, proxy+"demo?x=1", nil)
	redirect.Host = "secure.localhost"
	if resp, err := http.DefaultTransport.RoundTrip(redirect); err != nil {
		t.Errorf("http://secure.localhost/demo?x=1: %v", err)
	} else {
		resp.Body.Close()
		want := fmt.Sprintf("https://secure.localhost:%d/demo?x=1", httpsPort)
		if resp.StatusCode != http.StatusPermanentRedirect || resp.Header.Get("Location") != want {
			t.Errorf("http://secure.localhost/demo?x=1 = %d Location %q, want 308 to %s", resp.StatusCode, resp.Header.Get("Location"), want)
		}
	}

	// The deliberate mistake is in the logs as a JSON line with code,
	// container and key.
	dockertest.Eventually(t, 30*time.Second, func() error {
		logs := c.run("logs", "--no-color", "levee")
		sc := bufio.NewScanner(strings.NewReader(logs))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if i := strings.Index(line, "{"); i >= 0 {
				var m map[string]any
				if json.Unmarshal([]byte(line[i:]), &m) == nil && m["code"] == "W024" &&
					m["key"] == "levee.http.broken.circuitBreaker.threshold" &&
					strings.Contains(fmt.Sprint(m["object"]), "broken") {
					return nil
				}
			}
		}
		return fmt.Errorf("no W024 JSON line naming the broken container and key in the logs")
	})

	// The API lists it too (docs/getting-started.md step 3).
	status, body = api.do(t, "GET", "/diagnostics?code=W024", "", "")
	if status != 200 || !bytes.Contains(body, []byte("levee.http.broken.circuitBreaker.threshold")) {
		t.Fatalf("GET /diagnostics?code=W024 = %d %s", status, body)
	}
	if status, body := api.do(t, "GET", "/diagnostics", "", ""); status != 200 || bytes.Contains(body, []byte(otherProject)) {
		t.Fatalf("GET /diagnostics = %d, mentions the other project %s: %s", status, otherProject, body)
	}
	// And the dashboard (docs/dashboard.md).
	tab := composeDashboard(t, api)

	// Make echo fail: the breaker opens and Levee answers 503 + Retry-After.
	ips := echoIPs(t, cli, c.project)
	for _, ip := range ips {
		post(t, "http://"+ip+":8080/_echo/fail?status=500")
	}
	var retryAfter string
	dockertest.Eventually(t, 30*time.Second, func() error {
		status, hdr, _, err := tryGet(proxy, "echo.localhost")
		if err != nil {
			return err
		}
		if status != 503 || hdr.Get("X-Levee-Diagnostic") != "circuit-open" {
			return fmt.Errorf("got %d %q, want 503 circuit-open", status, hdr.Get("X-Levee-Diagnostic"))
		}
		retryAfter = hdr.Get("Retry-After")
		return nil
	})
	if n, err := strconv.Atoi(retryAfter); err != nil || n < 1 || n > 5 {
		t.Fatalf("Retry-After %q, want whole seconds in [1,5] (cooldown 5s)", retryAfter)
	}
	status, body = api.do(t, "GET", "/metrics", "", "")
	if v, ok := metricValue(string(body), "levee_breaker_state", `route="echo"`); status != 200 || !ok || v != 1 {
		t.Fatalf("levee_breaker_state{route=\"echo\"} = %v (found %v), want 1", v, ok)
	}
	var breaker struct {
		State          string `json:"state"`
		LastTransition struct {
			Rule string `json:"rule"`
		} `json:"last_transition"`
	}
	status, body = api.do(t, "GET", "/breakers/echo", "", "")
	if err := json.Unmarshal(body, &breaker); status != 200 || err != nil || breaker.State != "open" || breaker.LastTransition.Rule != "error_ratio" {
		t.Fatalf("GET /breakers/echo = %d %s, want open by error_ratio", status, body)
	}
	composeDashboardOpened(t, tab)

	// Make it healthy: after the cooldown a probe succeeds and it closes.
	for _, ip := range ips {
		post(t, "http://"+ip+":8080/_echo/ok")
	}
	dockertest.Eventually(t, 60*time.Second, func() error {
		status, hdr, reply, err := tryGet(proxy, "echo.localhost")
		if err != nil {
			return err
		}
		if strings.Contains(reply, otherProject) {
			t.Fatalf("echo.localhost answered by the other project's container: %s", reply)
		}
		if status != 200 {
			return fmt.Errorf("echo.localhost = %d %q", status, hdr.Get("X-Levee-Diagnostic"))
		}
		_, body := api.do(t, "GET", "/metrics", "", "")
		if v, ok := metricValue(string(body), "levee_breaker_state", `route="echo"`); !ok || v != 0 {
			return fmt.Errorf("levee_breaker_state = %v, want 0", v)
		}
		return nil
	})

	// An entrypoint posted to the API is routed…
	payload := fmt.Sprintf(`{"name":"viaapi","protocol":"Http","backends":[{"address":%q,"port":8080}],"config":{"hostnames":["api.localhost"]}}`, ips[0])
	if status, body := api.do(t, "POST", "/entrypoints", "application/json", payload); status != 201 {
		t.Fatalf("POST /entrypoints = %d %s", status, body)
	}
	dockertest.Eventually(t, 10*time.Second, func() error {
		if status, hdr, _, err := tryGet(proxy, "api.localhost"); err != nil || status != 200 {
			return fmt.Errorf("api.localhost = %d %q %v", status, hdr.Get("X-Levee-Diagnostic"), err)
		}
		return nil
	})

	// …and still there after the levee container restarts.
	c.run("restart", "levee")
	dockertest.Eventually(t, 60*time.Second, func() error {
		status, body := api.do(t, "GET", "/entrypoints/viaapi", "", "")
		if status != 200 || !bytes.Contains(body, []byte("api.localhost")) {
			return fmt.Errorf("GET /entrypoints/viaapi = %d %s", status, body)
		}
		if status, hdr, _, err := tryGet(proxy, "api.localhost"); err != nil || status != 200 {
			return fmt.Errorf("api.localhost after restart = %d %q %v", status, hdr.Get("X-Levee-Diagnostic"), err)
		}
		return nil
	})
}
