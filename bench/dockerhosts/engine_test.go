package dockerhosts

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/network"
)

// apiVersion is the Engine API version the simulated engines announce.
const apiVersion = "1.51"

// engine is one simulated Docker Engine: its running containers and the
// open event streams.
type engine struct {
	name string
	srv  *httptest.Server

	mu   sync.Mutex
	ctrs map[string]container.InspectResponse
	subs map[chan events.Message]struct{}
}

// versioned strips the API version prefix the client puts on every path.
var versioned = regexp.MustCompile(`^/v[0-9.]+`)

func newEngine(name string) *engine {
	e := &engine{name: name, ctrs: map[string]container.InspectResponse{}, subs: map[chan events.Message]struct{}{}}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	return e
}

// url is the engine's address as --docker-host takes it.
func (e *engine) url() string { return "tcp://" + strings.TrimPrefix(e.srv.URL, "http://") }

func (e *engine) close() { e.srv.Close() }

func (e *engine) serve(w http.ResponseWriter, r *http.Request) {
	path := versioned.ReplaceAllString(r.URL.Path, "")
	w.Header().Set("Api-Version", apiVersion)
	switch {
	case path == "/_ping":
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "OK")
	case path == "/containers/json":
		e.list(w)
	case strings.HasPrefix(path, "/containers/") && strings.HasSuffix(path, "/json"):
		e.inspect(w, strings.TrimSuffix(strings.TrimPrefix(path, "/containers/"), "/json"))
	case path == "/events":
		e.events(w, r)
	default:
		notFound(w, "page not found: "+path)
	}
}

func notFound(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

func (e *engine) list(w http.ResponseWriter) {
	e.mu.Lock()
	out := make([]container.Summary, 0, len(e.ctrs))
	for _, c := range e.ctrs {
		out = append(out, container.Summary{ID: c.ID, Names: []string{c.Name}, Labels: c.Config.Labels, State: container.StateRunning})
	}
	e.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

func (e *engine) inspect(w http.ResponseWriter, id string) {
	e.mu.Lock()
	c, ok := e.ctrs[id]
	e.mu.Unlock()
	if !ok {
		notFound(w, "No such container: "+id)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(c)
}

// events streams the engine's events as newline-separated JSON until the
// client goes away.
func (e *engine) events(w http.ResponseWriter, r *http.Request) {
	ch := make(chan events.Message, 64)
	e.mu.Lock()
	e.subs[ch] = struct{}{}
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.subs, ch)
		e.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	fl.Flush()
	enc := json.NewEncoder(w)
	for {
		select {
		case <-r.Context().Done():
			return
		case m := <-ch:
			if enc.Encode(m) != nil {
				return
			}
			fl.Flush()
		}
	}
}

// subscribers is how many event streams are open.
func (e *engine) subscribers() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.subs)
}

// add makes a running container without an event (before the sync).
func (e *engine) add(c container.InspectResponse) {
	e.mu.Lock()
	e.ctrs[c.ID] = c
	e.mu.Unlock()
}

// start adds c and sends its start event.
func (e *engine) start(c container.InspectResponse) {
	e.mu.Lock()
	e.ctrs[c.ID] = c
	e.mu.Unlock()
	e.emit(c, events.ActionStart)
}

// die removes the container and sends its die event.
func (e *engine) die(id string) {
	e.mu.Lock()
	c := e.ctrs[id]
	delete(e.ctrs, id)
	e.mu.Unlock()
	e.emit(c, events.ActionDie)
}

func (e *engine) emit(c container.InspectResponse, action events.Action) {
	attrs := map[string]string{"name": strings.TrimPrefix(c.Name, "/"), "image": "echo"}
	for k, v := range c.Config.Labels {
		attrs[k] = v
	}
	now := time.Now()
	m := events.Message{Type: events.ContainerEventType, Action: action, Actor: events.Actor{ID: c.ID, Attributes: attrs},
		Scope: "local", Time: now.Unix(), TimeNano: now.UnixNano()}
	e.mu.Lock()
	defer e.mu.Unlock()
	for ch := range e.subs {
		ch <- m
	}
}

// labelled is a running container named name, the one backend of its own
// HTTP route, publishing its port 8080 on hostPort.
func labelled(id, name string, hostPort int) container.InspectResponse {
	lbl := map[string]string{
		"levee.enable":                     "true",
		"levee.http." + name + ".host":     name + ".bench.local",
		"levee.http." + name + ".port":     "8080",
		"com.docker.compose.project":       "bench",
		"com.docker.compose.service":       name,
		"org.opencontainers.image.version": "1.0",
	}
	return container.InspectResponse{
		ID:      id,
		Name:    "/" + name,
		Created: "2026-01-02T03:04:05.123456789Z",
		State:   &container.State{Running: true, Status: container.StateRunning},
		Config:  &container.Config{Labels: lbl, ExposedPorts: network.PortSet{network.MustParsePort("8080/tcp"): {}}},
		NetworkSettings: &container.NetworkSettings{
			Networks: map[string]*network.EndpointSettings{"bench_default": {
				NetworkID: "net-bench", IPAddress: netip.MustParseAddr("172.18.0.2"),
			}},
			Ports: network.PortMap{network.MustParsePort("8080/tcp"): {
				{HostIP: netip.MustParseAddr("0.0.0.0"), HostPort: fmt.Sprint(hostPort)},
			}},
		},
	}
}
