// Command grpcload is the gRPC side of the proxy benchmark: a unary
// backend (grpc-go's health service, whose Check is a small unary call)
// and a closed-loop load generator built from grpc-go that reports calls
// per second and latency percentiles.
//
//	grpcload -backend 127.0.0.1:18090
//	grpcload -target 127.0.0.1:18091 -authority grpc.local -conns 4 -concurrency 64 -duration 10s
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func main() {
	backend := flag.String("backend", "", "serve the health service on this address (h2c) instead of loading")
	target := flag.String("target", "", "address to load (h2c)")
	authority := flag.String("authority", "", ":authority of the calls (the proxy's route host)")
	conns := flag.Int("conns", 4, "client connections")
	concurrency := flag.Int("concurrency", 64, "calls in flight, spread over the connections")
	duration := flag.Duration("duration", 10*time.Second, "length of the run")
	flag.Parse()
	if *backend != "" {
		serve(*backend)
		return
	}
	if err := load(*target, *authority, *conns, *concurrency, *duration); err != nil {
		log.Fatal(err)
	}
}

func serve(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	s := grpc.NewServer()
	healthpb.RegisterHealthServer(s, health.NewServer())
	log.Fatal(s.Serve(ln))
}

// load runs concurrency closed loops of Health/Check for duration and
// prints "calls_per_sec p50_ms p99_ms errors".
func load(target, authority string, conns, concurrency int, duration time.Duration) error {
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if authority != "" {
		opts = append(opts, grpc.WithAuthority(authority))
	}
	clients := make([]healthpb.HealthClient, conns)
	for i := range clients {
		cc, err := grpc.NewClient("passthrough:///"+target, opts...)
		if err != nil {
			return fmt.Errorf("dialling %s: %w", target, err)
		}
		defer cc.Close()
		clients[i] = healthpb.NewHealthClient(cc)
	}
	// Warm up: every connection made and one call through.
	for _, c := range clients {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := c.Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err != nil {
			return fmt.Errorf("first call to %s: %w", target, err)
		}
	}
	var mu sync.Mutex
	var all []time.Duration
	errors := 0
	end := time.Now().Add(duration)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range concurrency {
		c := clients[i%conns]
		wg.Go(func() {
			lat := make([]time.Duration, 0, 1<<14)
			bad := 0
			for time.Now().Before(end) {
				t0 := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := c.Check(ctx, &healthpb.HealthCheckRequest{})
				cancel()
				if err != nil {
					bad++
					continue
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			all = append(all, lat...)
			errors += bad
			mu.Unlock()
		})
	}
	wg.Wait()
	took := time.Since(start)
	slices.Sort(all)
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return float64(all[int(p*float64(len(all)-1))].Microseconds()) / 1000
	}
	_, err := fmt.Fprintf(os.Stdout, "%.0f %.2f %.2f %d\n", float64(len(all))/took.Seconds(), pct(0.5), pct(0.99), errors)
	return err
}
