// Command tcpload is the TCP relay benchmark's backend and load (see
// bench/proxy/tcp.sh).
//
// As a backend (-serve ADDR) it answers each connection by its first byte:
// 'D' and an 8-byte big-endian length: it sends that many bytes and closes
// (the bulk download); 'E': it echoes every byte back until the client
// closes (the ping-pong).
//
// As the load (-target ADDR) it runs one test for -duration and prints one
// tab-separated line: with -mode bulk, -conns connections each downloading
// -size bytes, again and again; with -mode pingpong, -conns connections
// each sending a -msg byte message and waiting for it to come back, in a
// closed loop; with -mode connect, -conns workers each opening a new
// connection, sending a -msg byte message, reading its echo and closing,
// again and again (new connections per second). -pid names a process
// whose CPU time (user + system, from /proc/PID/stat) over the run is
// reported per GB, per message or per connection.
package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/levee-proxy/levee/bench/proxy/internal/procstat"
)

func main() {
	serve := flag.String("serve", "", "run as the backend on this address")
	target := flag.String("target", "", "address to load")
	mode := flag.String("mode", "bulk", "bulk, pingpong or connect")
	conns := flag.Int("conns", 4, "connections")
	size := flag.Int64("size", 64<<20, "bytes per download (bulk)")
	msg := flag.Int("msg", 64, "message size (pingpong, connect)")
	duration := flag.Duration("duration", 5*time.Second, "length of the run")
	pid := flag.Int("pid", 0, "process whose CPU time is reported (0: none)")
	bpid := flag.Int("backend-pid", 0, "the backend's process, its CPU reported too (0: none)")
	flag.Parse()
	if *serve != "" {
		if err := runBackend(*serve); err != nil {
			log.Fatal(err)
		}
		return
	}
	if *target == "" {
		log.Fatal("tcpload: -serve or -target is needed")
	}
	c0, b0 := cpuSeconds(*pid), cpuSeconds(*bpid)
	var line string
	var err error
	switch *mode {
	case "bulk":
		var bytes int64
		var el time.Duration
		bytes, el, err = runBulk(*target, *conns, *size, *duration)
		gb := float64(bytes) / 1e9
		line = fmt.Sprintf("%.1f\t%.3f\t%.3f", float64(bytes)/1e6/el.Seconds(),
			(cpuSeconds(*pid)-c0)/gb, (cpuSeconds(*bpid)-b0)/gb)
	case "pingpong", "connect":
		run := runPingPong
		if *mode == "connect" {
			run = runConnect
		}
		var n int
		var el time.Duration
		var p50, p99 time.Duration
		n, el, p50, p99, err = run(*target, *conns, *msg, *duration)
		line = fmt.Sprintf("%.0f\t%.1f\t%.1f\t%.2f\t%.2f", float64(n)/el.Seconds(),
			float64(p50.Nanoseconds())/1e3, float64(p99.Nanoseconds())/1e3,
			(cpuSeconds(*pid)-c0)*1e6/float64(max(n, 1)), (cpuSeconds(*bpid)-b0)*1e6/float64(max(n, 1)))
	default:
		log.Fatalf("tcpload: unknown -mode %q (bulk, pingpong or connect)", *mode)
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(line)
}

// cpuSeconds is the user + system CPU time of process pid (0: none).
func cpuSeconds(pid int) float64 {
	if pid == 0 {
		return 0
	}
	s, err := procstat.CPUSeconds(pid)
	if err != nil {
		log.Fatalf("tcpload: %v", err)
	}
	return s
}

func runBackend(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("tcpload: listening on %s: %w", addr, err)
	}
	zeros := make([]byte, 256<<10)
	for {
		c, err := ln.Accept()
		if err != nil {
			return fmt.Errorf("tcpload: accepting on %s: %w", addr, err)
		}
		go serveConn(c, zeros)
	}
}

func serveConn(c net.Conn, zeros []byte) {
	defer c.Close()
	var kind [1]byte
	if _, err := io.ReadFull(c, kind[:]); err != nil {
		return
	}
	switch kind[0] {
	case 'D':
		var n [8]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		left := int64(binary.BigEndian.Uint64(n[:]))
		for left > 0 {
			w, err := c.Write(zeros[:min(left, int64(len(zeros)))])
			if err != nil {
				return
			}
			left -= int64(w)
		}
	case 'E':
		_, _ = io.Copy(c, c)
	}
}

// runBulk downloads size bytes over each of conns connections, a new
// connection after each download, until d has passed; it counts every
// byte read.
func runBulk(addr string, conns int, size int64, d time.Duration) (int64, time.Duration, error) {
	var total atomic.Int64
	var firstErr error
	var mu sync.Mutex
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 256<<10)
			for time.Now().Before(end) {
				if err := download(addr, size, end, buf, &total); err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return total.Load(), time.Since(start), firstErr
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func download(addr string, size int64, end time.Time, buf []byte, total *atomic.Int64) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return fmt.Errorf("tcpload: dialling %s: %w", addr, err)
	}
	defer c.Close()
	req := make([]byte, 9)
	req[0] = 'D'
	binary.BigEndian.PutUint64(req[1:], uint64(size))
	if _, err := c.Write(req); err != nil {
		return fmt.Errorf("tcpload: asking %s for %d bytes: %w", addr, size, err)
	}
	_ = c.SetReadDeadline(end)
	var got int64
	for got < size {
		n, err := c.Read(buf)
		got += int64(n)
		total.Add(int64(n))
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil // the run is over
			}
			return fmt.Errorf("tcpload: reading from %s after %d of %d bytes: %w", addr, got, size, err)
		}
	}
	return nil
}

// runPingPong sends a msg-byte message over each of conns connections and
// reads it back, in a closed loop, until d has passed; it returns the
// round trips done and their p50 and p99.
func runPingPong(addr string, conns, msg int, d time.Duration) (int, time.Duration, time.Duration, time.Duration, error) {
	lat := make([][]time.Duration, conns)
	errs := make([]error, conns)
	cs := make([]net.Conn, conns)
	for i := range cs {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return 0, 0, 0, 0, fmt.Errorf("tcpload: dialling %s: %w", addr, err)
		}
		defer c.Close()
		if _, err := c.Write([]byte{'E'}); err != nil {
			return 0, 0, 0, 0, fmt.Errorf("tcpload: starting the echo on %s: %w", addr, err)
		}
		cs[i] = c
	}
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, in := make([]byte, msg), make([]byte, msg)
			r := bufio.NewReaderSize(c, msg)
			l := make([]time.Duration, 0, 1<<16)
			for {
				t := time.Now()
				if !t.Before(end) {
					break
				}
				if _, err := c.Write(out); err != nil {
					errs[i] = fmt.Errorf("tcpload: writing to %s: %w", addr, err)
					break
				}
				if _, err := io.ReadFull(r, in); err != nil {
					errs[i] = fmt.Errorf("tcpload: reading the echo from %s: %w", addr, err)
					break
				}
				l = append(l, time.Since(t))
			}
			lat[i] = l
		}()
	}
	wg.Wait()
	return summarize(lat, errs, time.Since(start), "round trip through "+addr)
}

// runConnect runs conns workers, each, until d has passed, opening a new
// connection, sending an echo request with a msg-byte message, reading the
// echo and closing; it returns the connections done and the p50 and p99
// of their connect-to-echo time. A worker stops at its first error, and
// the run reports it: a refused or reset connection is a failure of the
// proxy under test, not something to retry past.
func runConnect(addr string, conns, msg int, d time.Duration) (int, time.Duration, time.Duration, time.Duration, error) {
	lat := make([][]time.Duration, conns)
	errs := make([]error, conns)
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, in := make([]byte, 1+msg), make([]byte, msg)
			out[0] = 'E'
			l := make([]time.Duration, 0, 1<<14)
			for {
				t := time.Now()
				if !t.Before(end) {
					break
				}
				if err := connectOnce(addr, out, in, t.Add(10*time.Second)); err != nil {
					errs[i] = err
					break
				}
				l = append(l, time.Since(t))
			}
			lat[i] = l
		}()
	}
	wg.Wait()
	return summarize(lat, errs, time.Since(start), "connection through "+addr)
}

// connectOnce is one connection of runConnect: dial, write out (the echo
// request and the message), read len(in) bytes back, close. deadline
// bounds the whole exchange.
func connectOnce(addr string, out, in []byte, deadline time.Time) error {
	c, err := net.DialTimeout("tcp", addr, time.Until(deadline))
	if err != nil {
		return fmt.Errorf("tcpload: dialling %s: %w", addr, err)
	}
	defer c.Close()
	_ = c.SetDeadline(deadline)
	if _, err := c.Write(out); err != nil {
		return fmt.Errorf("tcpload: writing to %s: %w", addr, err)
	}
	if _, err := io.ReadFull(c, in); err != nil {
		return fmt.Errorf("tcpload: reading the echo from %s: %w", addr, err)
	}
	return nil
}

// summarize merges the workers' latencies and errors into a run's
// result: how many (what: a round trip, a connection), the run's length
// el, their p50 and p99, and the workers' errors; no latency at all is an
// error too.
func summarize(lat [][]time.Duration, errs []error, el time.Duration, what string) (int, time.Duration, time.Duration, time.Duration, error) {
	all := slices.Concat(lat...)
	if len(all) == 0 {
		return 0, el, 0, 0, cmpErr(errors.Join(errs...), fmt.Errorf("tcpload: no %s", what))
	}
	slices.Sort(all)
	return len(all), el, all[len(all)/2], all[len(all)*99/100], errors.Join(errs...)
}
