package e2e

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Hostile HTTP/2 clients, through the binary (and, as make test runs the
// e2e suite per server, through both HTTP/2 servers): the waits of
// docs/operations.md ("Timeouts and limits") hold per stream, and what a
// client does wrong is never the backend's failure. The route trips its
// breaker and ejects its backend at the first failure, so one wrongly
// blamed outcome would show.
//
//   - a client that grants no flow-control window takes no response bytes:
//     its stream is reset after --response-write-timeout
//     (levee_client_errors_total{reason="write_failed"});
//   - a client that announces a body and sends none gets 408 after
//     --request-body-timeout (reason="body_timeout"), and the backend is
//     never asked.
func TestHTTP2HostileClients(t *testing.T) {
	var asked atomic.Int64
	big := bytes.Repeat([]byte("x"), 256<<10)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = w.Write(big)
	}))
	defer backend.Close()
	p := startLevee(t, "--docker=false", "--listen", "websecure=127.0.0.1:0,tls",
		"--response-write-timeout", "1s", "--request-body-timeout", "1s")
	secure := p.listenerAddr("websecure")
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(backend.URL, "http://"))
	payload := fmt.Sprintf(`{"name":"h2","backends":[{"address":%q,"port":%s}],"config":{"hostnames":["h2.test"],"tls":true,`+
		`"passive_health":{"consecutive_failures":1},"circuit_breaker":{"consecutive_failures":1,"min_requests":1,"threshold":1}}}`, host, port)
	createEntrypoint(t, p, payload)
	c := httpsClient(secure, nil)
	c.Transport.(*http.Transport).TLSClientConfig.InsecureSkipVerify = true
	waitFor(t, "the route over HTTP/2", func() error { return h2Get(c) })

	t.Run("no window", func(t *testing.T) {
		before := asked.Load()
		h := dialH2(t, secure, 0)
		h.headers(1, true, ":method", "GET", ":path", "/big")
		frames := h.until(t, 1, func(f http2.Frame) bool { _, ok := f.(*http2.RSTStreamFrame); return ok })
		if status := h.status(frames, 1); status != "200" {
			t.Errorf("response head %q before the reset, want 200 (the backend answered)", status)
		}
		for _, f := range frames {
			if d, ok := f.(*http2.DataFrame); ok && len(d.Data()) > 0 {
				t.Errorf("%d response bytes sent past a zero window", len(d.Data()))
			}
		}
		if asked.Load() != before+1 {
			t.Errorf("backend asked %d times, want once", asked.Load()-before)
		}
		waitForMetric(t, p, `levee_client_errors_total{reason="write_failed"}`, 1)
	})

	t.Run("no body", func(t *testing.T) {
		before := asked.Load()
		h := dialH2(t, secure, 65535)
		h.headers(1, false, ":method", "POST", ":path", "/upload", "content-length", "100")
		frames := h.until(t, 1, func(f http2.Frame) bool {
			hf, ok := f.(*http2.HeadersFrame)
			return ok && hf.StreamID == 1
		})
		if status := h.status(frames, 1); status != "408" {
			t.Errorf("answer %q, want 408", status)
		}
		if asked.Load() != before {
			t.Errorf("the backend was asked for a body the client never sent")
		}
		waitForMetric(t, p, `levee_client_errors_total{reason="body_timeout"}`, 1)
	})

	// Neither client made the backend look failed: still in rotation, the
	// breaker closed, and a well-behaved client is served.
	m := metrics(t, p)
	if !strings.Contains(m, `levee_breaker_state{route="h2"} 0`) {
		t.Errorf("the breaker is not closed:\n%s", grepLines(m, "levee_breaker_state"))
	}
	if !strings.Contains(m, `levee_backend_up{backend="`+host+":"+port+`",route="h2"} 1`) {
		t.Errorf("the backend left the rotation:\n%s", grepLines(m, "levee_backend_up"))
	}
	if err := h2Get(c); err != nil {
		t.Errorf("a well-behaved client afterwards: %v", err)
	}
}

func h2Get(c *http.Client) error {
	resp, err := c.Get("https://h2.test/ok")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, _ := io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 || resp.ProtoMajor != 2 || n != 256<<10 {
		return fmt.Errorf("%d %s, %d bytes", resp.StatusCode, resp.Proto, n)
	}
	return nil
}

// h2Conn is a raw HTTP/2 client connection, for frames no well-behaved
// client sends.
type h2Conn struct {
	conn net.Conn
	fr   *http2.Framer
	dec  *hpack.Decoder
}

// dialH2 connects with ALPN h2 and announces window as its initial
// stream flow-control window (SETTINGS_INITIAL_WINDOW_SIZE).
func dialH2(t *testing.T, addr string, window uint32) *h2Conn {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
		&tls.Config{ServerName: "h2.test", InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if got := conn.ConnectionState().NegotiatedProtocol; got != "h2" {
		t.Fatalf("ALPN %q, want h2", got)
	}
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	h := &h2Conn{conn: conn, fr: http2.NewFramer(conn, conn), dec: hpack.NewDecoder(4096, nil)}
	if err := h.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: window}); err != nil {
		t.Fatal(err)
	}
	return h
}

// headers opens stream id with the pseudo-headers and fields given as
// name, value pairs (:authority is h2.test).
func (h *h2Conn) headers(id uint32, endStream bool, kv ...string) {
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	_ = enc.WriteField(hpack.HeaderField{Name: ":scheme", Value: "https"})
	_ = enc.WriteField(hpack.HeaderField{Name: ":authority", Value: "h2.test"})
	for i := 0; i+1 < len(kv); i += 2 {
		_ = enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	_ = h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: b.Bytes(), EndStream: endStream, EndHeaders: true})
}

// until reads frames, acknowledging the server's SETTINGS, until done
// says stop for a frame of stream id, or the connection ends after a
// GOAWAY, for at most 15 s, and returns what it read.
func (h *h2Conn) until(t *testing.T, id uint32, done func(http2.Frame) bool) []http2.Frame {
	t.Helper()
	_ = h.conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	var frames []http2.Frame
	goaway := false
	for {
		f, err := h.fr.ReadFrame()
		if err != nil && goaway {
			return frames
		}
		if err != nil {
			t.Fatalf("before the expected frame: %v (read %d frames)", err, len(frames))
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = h.fr.WriteSettingsAck()
			}
			continue
		case *http2.HeadersFrame:
			// Decode now: the framer reuses its buffer for the next frame.
			fields, _ := h.dec.DecodeFull(f.HeaderBlockFragment())
			frames = append(frames, &decodedHeaders{HeadersFrame: f, fields: fields})
			if done(f) {
				return frames
			}
			continue
		case *http2.GoAwayFrame:
			// Streams up to LastStreamID are still answered.
			t.Logf("GOAWAY %v, last stream %d", f.ErrCode, f.LastStreamID)
			goaway = true
		}
		frames = append(frames, f)
		if f.Header().StreamID == id && done(f) {
			return frames
		}
	}
}

// decodedHeaders is a HEADERS frame with its fields decoded.
type decodedHeaders struct {
	*http2.HeadersFrame
	fields []hpack.HeaderField
}

// status is the :status of stream id's response head among frames.
func (h *h2Conn) status(frames []http2.Frame, id uint32) string {
	for _, f := range frames {
		if d, ok := f.(*decodedHeaders); ok && d.StreamID == id {
			for _, hf := range d.fields {
				if hf.Name == ":status" {
					return hf.Value
				}
			}
		}
	}
	return ""
}

func metrics(t *testing.T, p *leveeProc) string {
	t.Helper()
	resp, err := http.Get(p.apiURL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// waitForMetric waits until the series (name{labels}) is at least min.
func waitForMetric(t *testing.T, p *leveeProc, series string, min float64) {
	t.Helper()
	name, labels, _ := strings.Cut(strings.TrimSuffix(series, "}"), "{")
	waitFor(t, series, func() error {
		if v, ok := metricValue(metrics(t, p), name, labels); !ok || v < min {
			return fmt.Errorf("%s = %v (found %v), want at least %v", series, v, ok, min)
		}
		return nil
	})
}
