// Command idle measures what idle keep-alive client connections cost a
// proxy in resident memory: it opens -conns connections to -addr, sends one
// request on each and reads the answer, leaves them idle, and reads the
// resident set (VmRSS) of the proxy's processes (-pids) before, while the
// connections are idle, and after they are closed. It prints one
// tab-separated line:
//
//	target conns base_kib idle_kib per_conn_kib closed_kib returned_pct
//
// per_conn_kib is (idle - base) / conns; returned_pct is the share of the
// growth given back within -release after the clients left. bench/proxy/idle.sh
// runs it against Levee and nginx side by side.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "proxy address")
	host := flag.String("host", "bench.local", "Host header of the requests")
	conns := flag.Int("conns", 10000, "idle connections to open")
	pids := flag.String("pids", "", "comma-separated PIDs whose VmRSS is summed")
	name := flag.String("name", "proxy", "target name printed first")
	settle := flag.Duration("settle", 10*time.Second, "longest wait for the RSS to settle while idle")
	hold := flag.Duration("hold", 0, "how long the connections stay idle before the idle RSS is read (the steady state, after the runtime's periodic collection, needs over 2 min)")
	release := flag.Duration("release", 30*time.Second, "how long to watch the RSS fall after the clients leave")
	metrics := flag.String("metrics", "", "a Prometheus /metrics URL of the proxy: its Go heap and stack in use are logged at base and idle")
	flag.Parse()
	ids := strings.Split(*pids, ",")

	// One request first, so that the base includes a warmed-up proxy.
	warm := dialAndAsk(*addr, *host)
	if warm == nil {
		log.Fatal("the warm-up request failed")
	}
	warm.Close()
	base := settled(ids, *settle)
	goMemory(*metrics, "base")

	open := make([]net.Conn, *conns)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	var failed sync.Map
	for i := range open {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if c := dialAndAsk(*addr, *host); c != nil {
				open[i] = c
			} else {
				failed.Store(i, true)
			}
		}()
	}
	wg.Wait()
	nFailed := 0
	failed.Range(func(any, any) bool { nFailed++; return true })
	if nFailed > 0 {
		log.Fatalf("%d of %d connections failed", nFailed, *conns)
	}
	time.Sleep(*hold)
	idle := settled(ids, *settle)
	goMemory(*metrics, "idle")
	for _, c := range open {
		c.Close()
	}
	closed := lowest(ids, *release)
	growth := idle - base
	returned := 0.0
	if growth > 0 {
		returned = 100 * float64(idle-closed) / float64(growth)
	}
	fmt.Printf("%s\t%d\t%d\t%d\t%.2f\t%d\t%.0f\n", *name, *conns, base, idle,
		float64(growth)/float64(*conns), closed, returned)
}

// dialAndAsk opens a connection, sends one keep-alive GET and reads the
// whole answer; nil on any failure.
func dialAndAsk(addr, host string) net.Conn {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		log.Print(err)
		return nil
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", host); err != nil {
		c.Close()
		return nil
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		log.Print(err)
		c.Close()
		return nil
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		log.Printf("answer %d (close %v)", resp.StatusCode, resp.Close)
		c.Close()
		return nil
	}
	_ = c.SetDeadline(time.Time{})
	return c
}

// rss sums VmRSS (KiB) of the processes.
func rss(ids []string) int {
	total := 0
	for _, id := range ids {
		b, err := os.ReadFile("/proc/" + strings.TrimSpace(id) + "/status")
		if err != nil {
			log.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
				total += n
			}
		}
	}
	return total
}

// settled polls the RSS until two readings 1 s apart differ by under
// 0.5 %, or limit passes, and returns the last reading.
func settled(ids []string, limit time.Duration) int {
	end := time.Now().Add(limit)
	prev := rss(ids)
	for time.Now().Before(end) {
		time.Sleep(time.Second)
		cur := rss(ids)
		if diff := cur - prev; diff*200 < cur && -diff*200 < cur {
			return cur
		}
		prev = cur
	}
	return prev
}

// lowest returns the lowest RSS seen within limit.
func lowest(ids []string, limit time.Duration) int {
	end := time.Now().Add(limit)
	low := rss(ids)
	for time.Now().Before(end) {
		time.Sleep(500 * time.Millisecond)
		low = min(low, rss(ids))
	}
	return low
}

// goMemory logs the Go runtime's heap and stack in use from a Prometheus
// endpoint, when one is given.
func goMemory(url, when string) {
	if url == "" {
		return
	}
	resp, err := http.Get(url)
	if err != nil {
		log.Print(err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		for _, name := range []string{"go_memstats_heap_inuse_bytes ", "go_memstats_stack_inuse_bytes ", "go_goroutines "} {
			if strings.HasPrefix(line, name) {
				log.Printf("%s: %s", when, line)
			}
		}
	}
}
