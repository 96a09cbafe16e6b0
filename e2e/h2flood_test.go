package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/levee-proxy/levee/router/httpx/h2guard"
)

// HTTP/2 control frames that carry no request (SETTINGS, WINDOW_UPDATE,
// PRIORITY, PING, unknown types, and DATA or CONTINUATION frames that
// carry nothing on an open stream) are budgeted per connection, through the
// binary and on both HTTP/2 servers (--http-server levee: Levee's tlsmux
// with x/net's HTTP/2 server; stdlib: net/http's server): a client that
// sends nothing else is cut a bounded number of frames past the budget,
// while one that sends fewer is served, and a real client downloading
// megabytes (two WINDOW_UPDATEs every 4 KiB it reads) is never cut.
func TestHTTP2ControlFrameFloods(t *testing.T) {
	big := bytes.Repeat([]byte("y"), 4<<20)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			// A body that never ends keeps the flooding stream open.
			_, _ = io.Copy(io.Discard, r.Body)
			return
		}
		if r.URL.Path == "/big" {
			_, _ = w.Write(big)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer backend.Close()
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(backend.URL, "http://"))

	floods := []struct {
		name string
		// open readies the connection for the flood (a stream the
		// frames belong to), or is nil.
		open  func(h *h2Conn)
		write func(fr *http2.Framer) error
	}{
		{"SETTINGS", nil, func(fr *http2.Framer) error {
			return fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 65535})
		}},
		{"WINDOW_UPDATE", nil, func(fr *http2.Framer) error { return fr.WriteWindowUpdate(0, 1) }},
		{"PRIORITY", nil, func(fr *http2.Framer) error { return fr.WritePriority(3, http2.PriorityParam{Weight: 15}) }},
		{"PING", nil, func(fr *http2.Framer) error { return fr.WritePing(false, [8]byte{7}) }},
		{"unknown", nil, func(fr *http2.Framer) error { return fr.WriteRawFrame(0x20, 0, 0, []byte("x")) }},
		// Frames that carry nothing on a stream kept open (CVE-2019-9518):
		// empty DATA on an upload, empty CONTINUATION in a header block.
		{"DATA", func(h *h2Conn) { h.headers(1, false, ":method", "POST", ":path", "/hold") },
			func(fr *http2.Framer) error { return fr.WriteData(1, false, nil) }},
		{"CONTINUATION", func(h *h2Conn) {
			var b bytes.Buffer
			enc := hpack.NewEncoder(&b)
			for _, kv := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "h2.test"}, {":path", "/ok"}} {
				_ = enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
			}
			_ = h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b.Bytes(), EndHeaders: false})
		}, func(fr *http2.Framer) error { return fr.WriteContinuation(1, false, nil) }},
	}
	for _, server := range []string{"levee", "stdlib"} {
		t.Run("server="+server, func(t *testing.T) {
			p := startLevee(t, "--docker=false", "--http-server", server, "--listen", "websecure=127.0.0.1:0,tls")
			secure := p.listenerAddr("websecure")
			createEntrypoint(t, p, fmt.Sprintf(`{"name":"h2flood","backends":[{"address":%q,"port":%s}],"config":{"hostnames":["h2.test"],"tls":true}}`, host, port))
			c := httpsClient(secure, nil)
			c.Transport.(*http.Transport).TLSClientConfig.InsecureSkipVerify = true
			waitFor(t, "the route over HTTP/2", func() error { return h2Fetch(c, "/ok", 2) })

			for _, f := range floods {
				t.Run(f.name, func(t *testing.T) {
					h := dialH2(t, secure, 65535)
					if f.open != nil {
						f.open(h)
					}
					// Past the budget by a few frames: the connection ends.
					go func() {
						for range h2guard.Burst + 32 {
							if f.write(h.fr) != nil {
								return
							}
						}
					}()
					if !h.ends(t, 10*time.Second) {
						t.Fatalf("%d %s frames: the connection is still open after 10 s", h2guard.Burst+32, f.name)
					}
				})
				if f.open != nil {
					continue // the stream it opens is the flood's
				}
				t.Run(f.name+"/under the budget", func(t *testing.T) {
					h := dialH2(t, secure, 65535)
					for range h2guard.Burst - 16 {
						if err := f.write(h.fr); err != nil {
							t.Fatal(err)
						}
					}
					h.headers(1, true, ":method", "GET", ":path", "/ok")
					frames := h.until(t, 1, func(f http2.Frame) bool { _, ok := f.(*http2.HeadersFrame); return ok })
					if status := h.status(frames, 1); status != "200" {
						t.Fatalf("after %d %s frames: status %q, want 200", h2guard.Burst-16, f.name, status)
					}
				})
			}

			// 3 × 4 MiB on one connection: about 6,000 WINDOW_UPDATEs from
			// Go's client, six times the budget, paid for by the DATA sent.
			for i := range 3 {
				if err := h2Fetch(c, "/big", 2); err != nil {
					t.Fatalf("download %d: %v", i, err)
				}
			}
			if !strings.Contains(p.Output(), "past its budget") {
				t.Error("no cut connection was logged")
			}
			for _, frame := range []string{"SETTINGS", "WINDOW_UPDATE", "PRIORITY", "PING", "unknown", "DATA", "CONTINUATION"} {
				waitForMetric(t, p, `levee_http2_connections_cut_total{frame="`+frame+`"}`, 1)
			}
		})
	}
}

// h2Fetch GETs path on h2.test and checks an HTTP/2 200 with the whole
// body (4 MiB for /big).
func h2Fetch(c *http.Client, path string, major int) error {
	resp, err := c.Get("https://h2.test" + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	want := int64(2)
	if path == "/big" {
		want = 4 << 20
	}
	if err != nil || resp.StatusCode != 200 || resp.ProtoMajor != major || n != want {
		return fmt.Errorf("%d %s, %d of %d bytes, %v", resp.StatusCode, resp.Proto, n, want, err)
	}
	return nil
}

// ends reads (and acknowledges nothing) until the connection ends, and
// reports whether it did within timeout.
func (h *h2Conn) ends(t *testing.T, timeout time.Duration) bool {
	t.Helper()
	_ = h.conn.SetReadDeadline(time.Now().Add(timeout))
	buf := make([]byte, 32<<10)
	for {
		if _, err := h.conn.Read(buf); err != nil {
			var ne net.Error
			return !(errors.As(err, &ne) && ne.Timeout())
		}
	}
}
