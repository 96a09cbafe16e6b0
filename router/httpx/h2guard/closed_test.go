package h2guard

import (
	"bytes"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// post opens stream id with a POST to path whose body goes on.
func (c *rawClient) post(t *testing.T, id uint32, path string) {
	t.Helper()
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	for _, kv := range [][2]string{{":method", "POST"}, {":scheme", "https"}, {":authority", "h2.test"}, {":path", path}} {
		_ = enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
	}
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: b.Bytes(), EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
}

// untilReset reads frames until the server resets stream id.
func (c *rawClient) untilReset(t *testing.T, id uint32) {
	t.Helper()
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			t.Fatalf("waiting for the reset of stream %d: %v", id, err)
		}
		if r, ok := f.(*http2.RSTStreamFrame); ok && r.StreamID == id {
			return
		}
	}
}

// DATA on a stream that is no longer sending its request costs Go's server
// an RST_STREAM and a WINDOW_UPDATE each: whether it carries bytes or
// ends the stream, on a stream the client ended or the server reset, it
// is a control frame, cut once past the budget.
func TestDataOnClosedStreamsIsCut(t *testing.T) {
	s := startServer(t)
	payload := bytes.Repeat([]byte("d"), 16)
	for _, f := range []struct {
		name  string
		close func(t *testing.T, c *rawClient) // leaves stream 1 closed
		write func(fr *http2.Framer) error
	}{
		{"after the client ended it", func(t *testing.T, c *rawClient) {
			if status := c.get(t, 1, "/"); status != "200" {
				t.Fatalf("status %q, want 200", status)
			}
		}, func(fr *http2.Framer) error { return fr.WriteData(1, false, payload) }},
		{"ending it again", func(t *testing.T, c *rawClient) {
			if status := c.get(t, 1, "/"); status != "200" {
				t.Fatalf("status %q, want 200", status)
			}
		}, func(fr *http2.Framer) error { return fr.WriteData(1, true, payload) }},
		{"after the server reset it", func(t *testing.T, c *rawClient) {
			c.post(t, 1, "/noread")
			c.untilReset(t, 1)
		}, func(fr *http2.Framer) error { return fr.WriteData(1, false, payload) }},
		{"after the client reset it", func(t *testing.T, c *rawClient) {
			c.post(t, 1, "/")
			if err := c.fr.WriteRSTStream(1, http2.ErrCodeCancel); err != nil {
				t.Fatal(err)
			}
		}, func(fr *http2.Framer) error { return fr.WriteData(1, false, payload) }},
	} {
		t.Run(f.name, func(t *testing.T) {
			before := len(s.flooded())
			c := dial(t, s.addr)
			f.close(t, c)
			// A stream left open keeps the server reading.
			c.post(t, 3, "/")
			go func() {
				for range 2 * Burst {
					if f.write(c.fr) != nil {
						return
					}
				}
			}()
			c.readsUntilEnd(t)
			got := s.flooded()
			if len(got) != before+1 || got[before] != typeData {
				t.Errorf("cut for %v, want one cut for DATA", got[before:])
			}
		})
	}
}

// An upload the server answered early, whose client had a window of it
// in flight, is not cut: frames of a kilobyte and more on a stream the
// server reset pay for themselves, twice the budget of them.
func TestUploadInFlightAfterTheServerResetIsServed(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.addr)
	c.post(t, 1, "/noread")
	c.untilReset(t, 1)
	chunk := bytes.Repeat([]byte("u"), SmallFragment)
	done := make(chan error, 1)
	go func() {
		for range 2 * Burst {
			if err := c.fr.WriteData(1, false, chunk); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	// The server answers each frame on the closed stream (RST_STREAM and
	// a WINDOW_UPDATE); they are read here until the writer is done.
	_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("writing the upload: %v (cut for %v)", err, s.flooded())
			}
			if status := c.get(t, 3, "/"); status != "200" {
				t.Fatalf("after the upload: status %q, want 200 (cut for %v)", status, s.flooded())
			}
			if got := s.flooded(); len(got) != 0 {
				t.Fatalf("a client whose upload was answered early was cut: %v", got)
			}
			return
		default:
		}
		if _, err := c.fr.ReadFrame(); err != nil {
			t.Fatalf("reading the server's answers: %v (cut for %v)", err, s.flooded())
		}
	}
}

// A body sent in many small frames, as a streaming client sends its
// messages, is never counted while its stream is open: thrice the budget
// in one-byte frames, then the end, is served.
func TestSmallFramesOfAnOpenStreamAreServed(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.addr)
	c.post(t, 1, "/")
	for range 3 * Burst {
		if err := c.fr.WriteData(1, false, []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.fr.WriteData(1, true, nil); err != nil {
		t.Fatal(err)
	}
	if status := c.answer(t, 1); status != "200" {
		t.Fatalf("status %q, want 200 (cut for %v)", status, s.flooded())
	}
	if got := s.flooded(); len(got) != 0 {
		t.Fatalf("a client streaming small frames was cut: %v", got)
	}
}

// Resets past what the guard holds between two frames of the client are
// not lost: it forgets every open stream instead, so that no stream the
// server reset stays free.
func TestResetsPastTheLimitForgetEveryOpenStream(t *testing.T) {
	var c Conn
	c.headers(0, 1) // stream 1 opened, its body to come
	if !c.requestData(0, 16, 1) {
		t.Fatal("DATA on an open stream was counted")
	}
	for i := range maxOpen + 1 {
		c.serverReset(uint32(3 + 2*i))
	}
	c.takeResets()
	if c.requestData(0, 16, 1) {
		t.Fatal("after more resets than the guard holds, DATA on a stream was still free")
	}
}
