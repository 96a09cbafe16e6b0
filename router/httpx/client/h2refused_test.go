package client

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// refusingH2 is an h2c backend written with the framer: it sends
// settings and resets every stream with REFUSED_STREAM. It counts the
// connections it accepted and the streams it was sent.
type refusingH2 struct {
	addr           string
	conns, streams atomic.Int32
}

func newRefusingH2(t *testing.T, settings ...http2.Setting) *refusingH2 {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	b := &refusingH2{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.conns.Add(1)
			go b.serve(c, settings)
		}
	}()
	return b
}

func (b *refusingH2) serve(c net.Conn, settings []http2.Setting) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(c)
	if _, err := io.ReadFull(br, make([]byte, len(http2.ClientPreface))); err != nil {
		return
	}
	fr := http2.NewFramer(c, br)
	_ = fr.WriteSettings(settings...)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = fr.WriteSettingsAck()
			}
		case *http2.HeadersFrame:
			b.streams.Add(1)
			_ = fr.WriteRSTStream(f.StreamID, http2.ErrCodeRefusedStream)
		}
	}
}

// roundTrip sends method to the backend through c, with body (nil: none;
// rewindable says whether it has a GetBody).
func refusedRoundTrip(c *Standard, addr, method, body string, rewindable bool) (time.Duration, error) {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, "http://"+addr+"/", r)
	if !rewindable {
		req.GetBody = nil
		req.Body = io.NopCloser(req.Body)
	}
	start := time.Now()
	resp, err := c.RoundTripInformational(req, nil)
	if err == nil {
		resp.Body.Close()
	}
	return time.Since(start), err
}

// A backend that refuses every stream: the request is sent on two
// streams, then ends with a *StreamRefusedError within the Transport's
// 1 s wait before a third (not its minute of tries), whatever the body.
func TestH2RefusedStreamsEndTheRoundTrip(t *testing.T) {
	for _, c := range []struct {
		name, method, body string
		rewindable         bool
		streams            int32
	}{
		{"GET", http.MethodGet, "", true, H2MaxStreams},
		{"POST-rewindable", http.MethodPost, "payload", true, H2MaxStreams},
		// The Transport does not send a body it cannot rewind again.
		{"POST-streamed", http.MethodPost, "payload", false, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newRefusingH2(t)
			tr := NewH2(H2Options{DialTimeout: time.Second, HeaderTimeout: 10 * time.Second})
			defer tr.CloseIdleConnections()
			d, err := refusedRoundTrip(tr, b.addr, c.method, c.body, c.rewindable)
			var se *StreamRefusedError
			if !errors.As(err, &se) || se.Reason != ReasonStreamsRefused || se.Addr != b.addr {
				t.Fatalf("error %v (%T), want a *StreamRefusedError of %q for %s", err, err, ReasonStreamsRefused, b.addr)
			}
			if d > 3*time.Second {
				t.Fatalf("ended after %v, want about 1.1 s at most", d)
			}
			if n := b.streams.Load(); n != c.streams {
				t.Fatalf("the backend was sent %d streams, want %d", n, c.streams)
			}
		})
	}
}

// A backend whose SETTINGS grant no stream: the Transport dials a new
// connection for each try; the request ends with a *StreamRefusedError
// after H2MaxDials connections (or a stream sent before the SETTINGS
// came, which the header timeout ends), and ten requests dial a bounded
// number of connections.
func TestH2NoStreamSlotBoundsTheDials(t *testing.T) {
	b := newRefusingH2(t, http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 0})
	tr := NewH2(H2Options{DialTimeout: time.Second, HeaderTimeout: 500 * time.Millisecond})
	defer tr.CloseIdleConnections()
	const requests = 10
	for i := range requests {
		d, err := refusedRoundTrip(tr, b.addr, http.MethodGet, "", true)
		if err == nil {
			t.Fatalf("request %d answered", i)
		}
		if d > 3*time.Second {
			t.Fatalf("request %d ended after %v", i, d)
		}
	}
	// Each request dials at most H2MaxDials; idle connections from
	// earlier requests may be reused.
	t.Logf("%d requests: %d connections, %d streams", requests, b.conns.Load(), b.streams.Load())
	if n := b.conns.Load(); n > requests*H2MaxDials {
		t.Fatalf("%d connections for %d requests, want at most %d", n, requests, requests*H2MaxDials)
	}
}

// The budget is per round trip: a Standard for HTTP/1.1 has none, and a
// refused error names the backend and the counts.
func TestStreamRefusedErrorSays(t *testing.T) {
	e := &StreamRefusedError{Addr: "10.0.0.1:50051", Reason: ReasonNoStreamSlot, Streams: 1, Dials: 2}
	if s := e.Error(); !strings.Contains(s, "10.0.0.1:50051 granted no stream") || !strings.Contains(s, "2 connection(s)") {
		t.Fatalf("Error() = %q", s)
	}
	if !IsStreamRefused(errors.Join(errors.New("x"), e)) || IsStreamRefused(errors.New("REFUSED_STREAM")) {
		t.Fatal("IsStreamRefused does not tell the error")
	}
}
