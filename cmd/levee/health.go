package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// runHealth probes a running Levee's /health endpoint. The container image
// has no shell or curl, so its HEALTHCHECK runs `levee health`.
func runHealth(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	url := "http://127.0.0.1:3035/health"
	switch len(args) {
	case 0:
	case 1:
		url = args[0]
	default:
		fmt.Fprintln(stderr, "usage: levee health [URL]")
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		fmt.Fprintf(stderr, "levee health: bad URL %q: %v\n", url, err)
		return 2
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "levee health: %s: %v\n", url, err)
		return 1
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "levee health: %s answered %s\n", url, resp.Status)
		return 1
	}
	fmt.Fprintln(stdout, "ok")
	return 0
}
