package dashboard_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/levee-proxy/levee/e2e/browsertest"
	"github.com/levee-proxy/levee/e2e/leveetest"
)

// A route that serves gRPC calls gets a gRPC badge and a table of its
// methods with their calls by grpc-status, on the open page without a
// reload: 3 health checks of a served service (OK) and 2 of an unknown
// one (NOT_FOUND) through an h2c listener. A route that served only
// plain requests has neither.
func TestDashboardGRPCMethods(t *testing.T) {
	b := browsertest.Start(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	proc := leveetest.Start(t, leveeBinary, leveetest.Options{Args: []string{
		"--docker=false", "--api-token", adminToken, "--api-read-token", readToken,
		"--listen", "grpc=127.0.0.1:0,h2c",
		"--state-file", filepath.Join(t.TempDir(), "state.json"),
	}})
	f := &fixture{proc: proc, base: "http://" + proc.APIAddr + "/dashboard/"}
	f.api(t, "POST", "/entrypoints", adminToken, fmt.Sprintf(`{"name":"api","backends":[{"address":"127.0.0.1","port":%d}],
		"config":{"hostnames":["api.test"],"scheme":"h2c"}}`, ln.Addr().(*net.TCPAddr).Port), http.StatusCreated)
	f.api(t, "POST", "/entrypoints", adminToken, `{"name":"web","backends":[{"address":"127.0.0.1","port":9}],
		"config":{"hostnames":["web.test"]}}`, http.StatusCreated)
	line, err := proc.WaitLog(10*time.Second, func(m map[string]any) bool {
		return m["message"] == "listening" && m["listener"] == "proxy" && m["name"] == "grpc"
	})
	if err != nil {
		t.Fatalf("the h2c listener: %v", err)
	}

	tab := signIn(t, b, f, "routes", readToken)
	waitJS(t, tab, pageTimeout, `document.querySelectorAll('article.route').length === 2`)
	if got := evalString(t, tab, `document.querySelector('article[data-route="api"] h3 .badge.grpc').textContent`); got != "" {
		t.Fatalf("gRPC badge %q before any call, want none", got)
	}

	cc, err := grpc.NewClient("passthrough:///"+fmt.Sprint(line["addr"]), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority("api.test"))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	hc := healthpb.NewHealthClient(cc)
	for i := range 5 {
		service, want := "", codes.OK
		if i >= 3 {
			service, want = "nope", codes.NotFound
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		cancel()
		if status.Code(err) != want {
			t.Fatalf("check %q through levee: %v, want %s", service, err, want)
		}
	}

	card := `document.querySelector('article[data-route="api"]')`
	row := card + `.querySelector('.grpc-methods tr[data-method="grpc.health.v1.Health/Check"]')`
	waitJS(t, tab, pageTimeout, row+` !== null && `+row+`.cells[1].textContent === "5"`)
	if got := evalString(t, tab, card+`.querySelector('h3 .badge.grpc').textContent`); got != "gRPC" {
		t.Errorf("api's gRPC badge %q, want gRPC", got)
	}
	if got := evalString(t, tab, `[...`+row+`.querySelectorAll('.grpc-status')].map(s => s.textContent).join("|")`); got != "OK 3|NOT_FOUND 2" {
		t.Errorf("Health/Check statuses %q, want OK 3|NOT_FOUND 2", got)
	}
	if got := evalString(t, tab, card+`.querySelector('.grpc-methods caption').textContent`); !strings.Contains(got, "gRPC methods") {
		t.Errorf("gRPC table caption %q", got)
	}
	web := `document.querySelector('article[data-route="web"]')`
	if got := evalString(t, tab, `String(`+web+`.querySelector('h3 .badge.grpc').textContent === "" && `+web+`.querySelector('.grpc-methods') === null)`); got != "true" {
		t.Errorf("web, no gRPC call, shows a gRPC badge or table")
	}
	screenshot(t, tab, "grpc")
}
