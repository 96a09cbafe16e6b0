// Command fixedload sends an exact number of keep-alive GET requests over a
// few connections and checks every answer is a 200, so that a process's
// instruction count can be divided by the requests it served (see
// bench/proxy/instructions.sh). It is not a load generator: wrk is.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18090", "proxy address")
	host := flag.String("host", "bench.local", "Host header")
	n := flag.Int("n", 1000, "requests in all")
	conns := flag.Int("c", 4, "connections")
	flag.Parse()
	if err := run(*addr, *host, *n, *conns); err != nil {
		fmt.Fprintf(os.Stderr, "fixedload: %v\n", err)
		os.Exit(1)
	}
}

func run(addr, host string, n, conns int) error {
	req := []byte("GET / HTTP/1.1\r\nHost: " + host + "\r\nUser-Agent: fixedload\r\n\r\n")
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for i := range conns {
		share := n / conns
		if i < n%conns {
			share++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := send(addr, req, share); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func send(addr string, req []byte, n int) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return fmt.Errorf("dialing %s: %w", addr, err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for i := range n {
		_ = c.SetDeadline(time.Now().Add(60 * time.Second))
		if _, err := c.Write(req); err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return fmt.Errorf("answer %d: %w", i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("answer %d: status %d", i, resp.StatusCode)
		}
	}
	return nil
}
