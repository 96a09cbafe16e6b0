// Command backend is the upstream of the proxy benchmark: an HTTP/1.1
// keep-alive server that answers every request with the same small body, so
// that the figures measure the proxies and not the backend.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:18081", "address to listen on")
	flag.Parse()
	// The body is small on purpose: the benchmark is about per-request
	// overhead, not bandwidth.
	body := []byte("hello from the levee bench backend\n")
	length := []string{strconv.Itoa(len(body))}
	contentType := []string{"text/plain; charset=utf-8"}
	srv := &http.Server{
		Addr: *listen,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			// Setting the header map directly avoids canonicalisation and
			// content sniffing: the backend should cost as little as it can.
			h := w.Header()
			h["Content-Length"] = length
			h["Content-Type"] = contentType
			w.Write(body)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       5 * time.Minute,
	}
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintf(os.Stderr, "backend on %s: %v\n", *listen, err)
		os.Exit(1)
	}
}
