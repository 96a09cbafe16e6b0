package conformance

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2Client is a raw HTTP/2 client connection to the TLS listener: it
// sends a :path exactly as given, which no well-behaved client does.
type h2Client struct {
	conn net.Conn
	fr   *http2.Framer
	dec  *hpack.Decoder
	host string
	next uint32 // the next stream id
}

// dialH2 connects to addr with ALPN h2 for requests to host.
func dialH2(t *testing.T, addr, host string) *h2Client {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
		&tls.Config{ServerName: host, InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatalf("dialing %s with h2: %v", addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	if got := conn.ConnectionState().NegotiatedProtocol; got != "h2" {
		t.Fatalf("ALPN %q, want h2", got)
	}
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	c := &h2Client{conn: conn, fr: http2.NewFramer(conn, conn), dec: hpack.NewDecoder(4096, nil), host: host, next: 1}
	if err := c.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return c
}

// get sends GET with :path path on a new stream and returns the answer's
// status and X-Levee-Diagnostic; status 0 when the server reset the
// stream instead of answering.
func (c *h2Client) get(t *testing.T, path string) (status int, diag string) {
	t.Helper()
	id := c.next
	c.next += 2
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", c.host}, {":path", path}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	_ = c.conn.SetDeadline(time.Now().Add(10 * time.Second))
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: b.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
		t.Fatalf("HTTP/2 :path %s: writing HEADERS: %v", path, err)
	}
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			t.Fatalf("HTTP/2 :path %s: %v", path, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = c.fr.WriteSettingsAck()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				_ = c.fr.WritePing(true, f.Data)
			}
		case *http2.GoAwayFrame:
			t.Fatalf("HTTP/2 :path %s: GOAWAY %v", path, f.ErrCode)
		case *http2.RSTStreamFrame:
			if f.StreamID == id {
				return 0, ""
			}
		case *http2.HeadersFrame:
			fields, err := c.dec.DecodeFull(f.HeaderBlockFragment())
			if err != nil {
				t.Fatalf("HTTP/2 :path %s: decoding the answer: %v", path, err)
			}
			if f.StreamID != id {
				continue
			}
			for _, hf := range fields {
				switch hf.Name {
				case ":status":
					status, _ = strconv.Atoi(hf.Value)
				case "x-levee-diagnostic":
					diag = hf.Value
				}
			}
			if status >= 200 {
				return status, diag
			}
		}
	}
}
