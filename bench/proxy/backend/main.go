// Command backend is the upstream of the proxy benchmark: an HTTP/1.1
// keep-alive server that answers every request with the same small body, so
// that the figures measure the proxies and not the backend.
//
// With -json-bytes N it answers instead with a JSON document of about N
// bytes (application/json, compressible like a typical API answer), for the
// compression comparison (bench/proxy/tls.sh).
//
// With -otlp-sink it is instead an OTLP/HTTP receiver that drops what it
// is sent: every request gets 200 with an empty protobuf body (an empty
// ExportTraceServiceResponse, which says every span was accepted), the
// export target of the tracing rows (bench/proxy/run.sh).
package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:18081", "address to listen on")
	jsonBytes := flag.Int("json-bytes", 0, "answer with a JSON body of about this many bytes instead of the small text body (0: the text body)")
	otlpSink := flag.Bool("otlp-sink", false, "be an OTLP/HTTP receiver that accepts and drops every export")
	tlsCert := flag.String("tls-cert", "", "serve HTTPS (HTTP/1.1 and HTTP/2 by ALPN) with this certificate (PEM); needs -tls-key")
	tlsKey := flag.String("tls-key", "", "the private key (PEM) of -tls-cert")
	flag.Parse()
	// The body is small on purpose: the benchmark is about per-request
	// overhead, not bandwidth.
	body := []byte("hello from the levee bench backend\n")
	contentType := []string{"text/plain; charset=utf-8"}
	if *jsonBytes > 0 {
		body = JSONBody(*jsonBytes)
		contentType = []string{"application/json"}
	}
	if *otlpSink {
		body, contentType = nil, []string{"application/x-protobuf"}
	}
	length := []string{strconv.Itoa(len(body))}
	srv := &http.Server{
		Addr: *listen,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Setting the header map directly avoids canonicalisation and
			// content sniffing: the backend should cost as little as it can.
			h := w.Header()
			h["Content-Length"] = length
			h["Content-Type"] = contentType
			if *otlpSink {
				// The export is read to its end, so the connection is kept.
				_, _ = io.Copy(io.Discard, r.Body)
			}
			w.Write(body)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       5 * time.Minute,
	}
	var err error
	if *tlsCert != "" {
		err = srv.ListenAndServeTLS(*tlsCert, *tlsKey)
	} else {
		err = srv.ListenAndServe()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "backend on %s: %v\n", *listen, err)
		os.Exit(1)
	}
}

// JSONBody returns a JSON array of product-like records, at least n bytes
// long and at most one record longer: repeated keys, varied numbers and
// words, so that it compresses like an API answer (gzip to roughly a
// fifth), not like a run of one byte. The same n gives the same bytes.
func JSONBody(n int) []byte {
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
		"india", "juliett", "kilo", "lima", "mike", "november", "oscar", "papa"}
	var x uint32 = 2463534242 // xorshift32: deterministic, no math/rand seeding
	next := func() uint32 {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		return x
	}
	b := make([]byte, 0, n+256)
	b = append(b, '[')
	for i := 0; len(b) < n-1; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		r := next()
		b = fmt.Appendf(b, `{"id":%d,"sku":"SKU-%08X","name":"%s %s","price":%d.%02d,"stock":%d,"tags":["%s","%s"],"active":%t}`,
			i, r, words[r%16], words[(r>>4)%16], r%1000, (r>>8)%100, (r>>12)%500,
			words[(r>>16)%16], words[(r>>20)%16], r&1 == 0)
	}
	return append(b, ']')
}
