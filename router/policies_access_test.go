package router

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy/basicauth"
)

// What only the router sees of basic auth, a users file's lines, is
// reported: W055 for an apr1 line, W056 when the file makes the costs
// differ, W050 (and the route denies) for a file that is not a regular
// file.
func TestBasicAuthUsersFileDiagnostics(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "htpasswd")
	apr1 := "ann:$apr1$H6uskkkW$5ZFNT.MKp/uF5QZ.U5Pld0"
	if err := os.WriteFile(file, []byte(apr1+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	slots := basicauth.NewSlots(1, 0)
	r := New(Options{PasswordSlots: slots})
	defer r.Close()
	good := route("a", "/", "a.test")
	good.Access.BasicAuth = &config.BasicAuth{Users: []string{"bob:$2y$05$c4WoMPo3SXsafkva.HHa6uXQZWr7oboPiC2bT/r7q1BB8I2s0BRqC"}, UsersFile: file}
	device := route("b", "/", "b.test")
	device.Access.BasicAuth = &config.BasicAuth{UsersFile: "/dev/urandom"}
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{good, device}})

	got := map[string][]diagnostics.Diagnostic{}
	for _, d := range r.store.All() {
		got[d.Source.ObjectID+" "+string(d.Code)] = append(got[d.Source.ObjectID+" "+string(d.Code)], d)
	}
	if w := got["a W055"]; len(w) != 1 || !strings.Contains(w[0].Message, `"ann"`) || !strings.Contains(w[0].Hint, "htpasswd -nbB") {
		t.Errorf("W055 for the file's apr1 line: %v", w)
	}
	if w := got["a W056"]; len(w) != 1 || !strings.Contains(w[0].Message, "bob bcrypt cost 5") {
		t.Errorf("W056 for the file's cost: %v", w)
	}
	if w := got["b W050"]; len(w) != 1 || !strings.Contains(w[0].Message, "not a regular file") {
		t.Errorf("W050 for /dev/urandom: %v", w)
	}
	if len(got["a W050"]) != 0 {
		t.Errorf("route a denies: %v", got["a W050"])
	}
	rt := r.Snapshot().Match(http.MethodGet, "b.test", "/")
	if rt == nil {
		t.Fatal("route b is not routed")
	}
	req := httptest.NewRequest(http.MethodGet, "http://b.test/", nil)
	req.SetBasicAuth("x", "y")
	rec := httptest.NewRecorder()
	rt.Policies().Serve(rec, req, http.NotFoundHandler())
	if rec.Code != http.StatusForbidden {
		t.Errorf("route with /dev/urandom as users file: %d, want 403", rec.Code)
	}
}
