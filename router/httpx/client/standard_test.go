package client

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"testing"
	"time"
)

func answerOK(body string) string {
	return "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

// A backend that answers /first twice in one write: net/http's Transport
// pools the connection before it looks at its buffer, and a request that
// takes it from the pool in that moment is handed the second answer
// (standard_conn.go). The moment is made to last here: the first
// request's PutIdleConn hook, which the read loop calls between pooling
// the connection and looking, holds it until the next request has written
// its headers (without Standard's wait, at once) or for a second (with
// it, since the next request waits for the read loop). Either way the
// next request must get its own answer.
func TestStandardNeverHandsALeftoverToTheNextRequest(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					answer := answerOK(req.URL.Path)
					if req.URL.Path == "/first" {
						answer += answerOK("/admin-secret")
					}
					if _, err := io.WriteString(c, answer); err != nil {
						return
					}
				}
			}(c)
		}
	}()
	tr := NewStandard(&http.Transport{}, 0)
	defer tr.CloseIdleConnections()
	base := "http://" + ln.Addr().String()

	var idleOnce, wroteOnce sync.Once
	idle, wrote := make(chan struct{}), make(chan struct{})
	first := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		PutIdleConn: func(err error) {
			if err != nil {
				return
			}
			idleOnce.Do(func() { close(idle) })
			select {
			case <-wrote:
			case <-time.After(time.Second):
			}
		},
	})
	type result struct {
		body string
		err  error
	}
	second := make(chan result, 1)
	go func() {
		<-idle
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			WroteHeaders: func() { wroteOnce.Do(func() { close(wrote) }) },
		})
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/next", nil)
		body, err := fetch(tr, req)
		second <- result{body, err}
	}()
	req, _ := http.NewRequestWithContext(first, http.MethodGet, base+"/first", nil)
	if body, err := fetch(tr, req); err != nil || body != "/first" {
		t.Fatalf("first answer %q, %v", body, err)
	}
	select {
	case r := <-second:
		if r.err != nil || r.body != "/next" {
			t.Fatalf("the next request got %q (%v): a leftover of another exchange", r.body, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the next request got no answer")
	}
}

func fetch(tr *Standard, req *http.Request) (string, error) {
	resp, err := tr.RoundTripInformational(req, nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
