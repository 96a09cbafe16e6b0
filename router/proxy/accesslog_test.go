package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/crypto/bcrypt"

	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
)

// Apache's ap_escape_logitem: quotes and backslashes get a backslash,
// the C escapes their letter, every other non-printable byte \xhh.
func TestAppendLogItemEscapesAsApache(t *testing.T) {
	for in, want := range map[string]string{
		`plain /a?b=c`:          `plain /a?b=c`,
		`say "hi" \ bye`:        `say \"hi\" \\ bye`,
		"a\nb\rc\td\be\vf":      `a\nb\rc\td\be\vf`,
		"nul\x00esc\x1bdel\x7f": `nul\x00esc\x1bdel\x7f`,
		"caf\xc3\xa9":           `caf\xc3\xa9`,
		"":                      "",
	} {
		if got := string(appendLogItem(nil, in)); got != want {
			t.Errorf("appendLogItem(%q) = %s, want %s", in, got, want)
		}
	}
}

var clfLine = regexp.MustCompile(`^(\S+) - (\S+) \[\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4}\] "(.*)" (\d{3}) (\S+)(?: "(.*)" "(.*)")?$`)

// clfLines splits the access output into its lines, failing on any line
// that is not in Common or Combined Log Format.
func clfLines(t *testing.T, out string) [][]string {
	t.Helper()
	var lines [][]string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		m := clfLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("not a CLF line: %q", l)
		}
		lines = append(lines, m[1:])
	}
	return lines
}

func TestAccessLogCombined(t *testing.T) {
	var out syncBuffer
	h := newHarness(t, Options{AccessLog: true, AccessLogFormat: AccessLogCombined, AccessLogOut: &out})
	a := newBackend(t, "a")
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	locked := ep("locked", a.backend())
	locked.Access.BasicAuth = &config.BasicAuth{Users: []string{"alice:" + string(hash)}}
	h.set(config.SourceDocker, ep("web", a.backend()), locked)

	// In-process, so that the request line and the fields may hold bytes
	// a client library would refuse to send.
	req := httptest.NewRequest(http.MethodGet, "http://web.test/x", nil)
	req.RequestURI = "/a\x01\"b"
	req.RemoteAddr = "[2001:db8::1]:4711"
	req.Header["Referer"] = []string{`http://r.test/"q"`}
	req.Header["User-Agent"] = []string{"ua\n\"x\"\\ caf\xc3\xa9"}
	rec := httptest.NewRecorder()
	h.p.ServeHTTP(rec, req)
	body := rec.Body.Len() // whatever the backend made of the odd target

	good, _ := http.NewRequest(http.MethodGet, h.front.URL+"/in", nil)
	good.Host = "locked.test"
	good.SetBasicAuth("alice", "s3cret")
	bad, _ := http.NewRequest(http.MethodGet, h.front.URL+"/in", nil)
	bad.Host = "locked.test"
	bad.SetBasicAuth("alice", "wrong")
	for _, r := range []*http.Request{good, bad} {
		resp, err := h.front.Client().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	h.get("nowhere.test", "/")

	// The line is written once the response is: wait for it.
	eventually(t, "four lines", func() bool { return strings.Count(out.String(), "\n") >= 4 })
	lines := clfLines(t, out.String())
	if len(lines) != 4 {
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
	want := [][]string{
		{"2001:db8::1", "-", `GET /a\x01\"b HTTP/1.1`, strconv.Itoa(rec.Code), strconv.Itoa(body), `http://r.test/\"q\"`, `ua\n\"x\"\\ caf\xc3\xa9`},
		{"127.0.0.1", "alice", "GET /in HTTP/1.1", "200", "9", "-", "Go-http-client/1.1"},
		{"127.0.0.1", "-", "GET /in HTTP/1.1", "401", strconv.Itoa(len("authentication required\n")), "-", "Go-http-client/1.1"},
		{"127.0.0.1", "-", "GET / HTTP/1.1", "404", strconv.Itoa(len("no route for this host and path\n")), "-", "Go-http-client/1.1"},
	}
	for i := range want {
		if strings.Join(lines[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("line %d:\n got %q\nwant %q", i, lines[i], want[i])
		}
	}
}

// Common is Combined without the two header fields; a HEAD or a 304 has
// no body: %b is "-".
func TestAccessLogCommon(t *testing.T) {
	var out syncBuffer
	h := newHarness(t, Options{AccessLog: true, AccessLogFormat: AccessLogCommon, AccessLogOut: &out})
	a := newBackend(t, "a")
	h.set(config.SourceDocker, ep("web", a.backend()))
	resp := h.do(http.MethodHead, "web.test", "/", nil)
	resp.Body.Close()
	eventually(t, "the line", func() bool { return strings.HasSuffix(out.String(), "\n") })
	got := strings.TrimSuffix(out.String(), "\n")
	if !strings.HasSuffix(got, `] "HEAD / HTTP/1.1" 200 -`) || !strings.HasPrefix(got, "127.0.0.1 - - [") {
		t.Fatalf("common line %q", got)
	}
}

func TestParseStatusRanges(t *testing.T) {
	got, err := ParseStatusRanges(" 400-599, 302 ,")
	if err != nil || len(got) != 2 || got[0] != (StatusRange{400, 599}) || got[1] != (StatusRange{302, 302}) {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"abc", "600-500", "99", "1000", "400-", "4xx"} {
		if _, err := ParseStatusRanges(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseStatusRanges(%q): %v", bad, err)
		}
	}
}

// Filters as Traefik's: none set keeps all; otherwise any set filter
// that keeps a request keeps it.
func TestAccessLogFilterKeep(t *testing.T) {
	errs := AccessLogFilter{Status: []StatusRange{{400, 599}, {302, 302}}}
	slow := AccessLogFilter{MinDuration: 200 * time.Millisecond}
	both := AccessLogFilter{Status: errs.Status, MinDuration: slow.MinDuration, Retries: true}
	for _, c := range []struct {
		f       AccessLogFilter
		status  int
		d       time.Duration
		retried bool
		keep    bool
	}{
		{AccessLogFilter{}, 200, 0, false, true},
		{errs, 200, time.Second, false, false},
		{errs, 302, 0, false, true},
		{errs, 404, 0, false, true},
		{errs, 599, 0, false, true},
		{errs, 301, 0, true, false},
		{slow, 500, 200 * time.Millisecond, false, false},
		{slow, 200, 201 * time.Millisecond, false, true},
		{both, 200, time.Millisecond, true, true},
		{both, 200, time.Millisecond, false, false},
	} {
		if got := c.f.keep(c.status, c.d, c.retried); got != c.keep {
			t.Errorf("%+v keep(%d, %s, %v) = %v, want %v", c.f, c.status, c.d, c.retried, got, c.keep)
		}
	}
}

// The filter applies to the lines written; retried requests are kept
// with Retries whatever their status.
func TestAccessLogFiltered(t *testing.T) {
	var out syncBuffer
	h := newHarness(t, Options{AccessLog: true, AccessLogFormat: AccessLogCommon, AccessLogOut: &out,
		AccessLogFilter: AccessLogFilter{Status: []StatusRange{{404, 404}}, Retries: true}, EjectAfter: -1})
	a := newBackend(t, "a")
	e := ep("web", deadBackend(t), a.backend())
	e.LoadBalancer = config.RoundRobin
	h.set(config.SourceDocker, e)
	h.get("nowhere.test", "/missing")
	for range 4 {
		h.get("web.test", "/ok")
	}
	h.get("nowhere.test", "/missing")
	eventually(t, "the last 404's line", func() bool { return strings.Count(out.String(), "/missing") == 2 })
	lines := clfLines(t, out.String())
	var missing, retried int
	for _, l := range lines {
		switch {
		case l[3] == "404" && strings.Contains(l[2], "/missing"):
			missing++
		case l[3] == "200" && strings.Contains(l[2], "/ok"):
			retried++
		default:
			t.Errorf("line kept: %q", l)
		}
	}
	if missing != 2 || retried == 0 || retried == 4 {
		t.Fatalf("404s %d, retried 200s %d (of 4, some first tried the dead backend):\n%s", missing, retried, out.String())
	}
}

// With its own writer, the JSON access log is written whatever the
// process log's level, with the logger's fields, and not to the logger.
func TestAccessLogJSONToWriter(t *testing.T) {
	var logs, out bytes.Buffer
	r := router.New(router.Options{Logger: zerolog.Nop()})
	defer r.Close()
	p := New(r, Options{Logger: zerolog.New(&logs).Level(zerolog.WarnLevel).With().Str("component", "router").Logger(),
		AccessLog: true, AccessLogOut: &out})
	defer p.Close()
	p.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "http://nowhere.test/j", nil))
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil || m["event"] != "access" || m["path"] != "/j" || m["component"] != "router" {
		t.Fatalf("%v %q", err, out.String())
	}
	if strings.Contains(logs.String(), `"event":"access"`) {
		t.Fatal("access line also in the process log")
	}
}

// Formatting and writing a Combined line allocates nothing.
func TestAccessLogCombinedAllocatesNothing(t *testing.T) {
	r := router.New(router.Options{Logger: zerolog.Nop()})
	defer r.Close()
	p := New(r, Options{AccessLog: true, AccessLogFormat: AccessLogCombined, AccessLogOut: io.Discard})
	defer p.Close()
	req := httptest.NewRequest(http.MethodGet, "http://web.test/a?b=c", nil)
	req.RemoteAddr = "192.0.2.1:1234"
	req.Header["User-Agent"] = []string{`curl/8 "x"`}
	req.Header["Referer"] = []string{"https://r.test/"}
	x := &exchange{p: p, req: req, uri: req.RequestURI, start: time.Now(), status: 200, sent: 512}
	p.writeCLF(x, 200) // fills the pool
	if n := testing.AllocsPerRun(100, func() { p.writeCLF(x, 200) }); n != 0 {
		t.Fatalf("%v allocations per line", n)
	}
}
