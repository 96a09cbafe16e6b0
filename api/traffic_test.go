package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/router/status"
	"github.com/levee-proxy/levee/router/traffic"
)

// GET /traffic lists the routes that served, with their backends' figures;
// GET /traffic/{route} one route (404 for an unknown one). The requests
// are recorded in the real router's rings as the request path does.
func TestRealTraffic(t *testing.T) {
	h := newRealHarness(t, filepath.Join(t.TempDir(), "state.json"))
	wantStatus(t, h.post(seedPayload), http.StatusCreated)

	rec := h.do(http.MethodGet, "/traffic", "", "")
	wantStatus(t, rec, http.StatusOK)
	var all status.Traffic
	if err := json.Unmarshal(rec.Body.Bytes(), &all); err != nil {
		t.Fatal(err)
	}
	if all.Routes == nil || len(all.Routes) != 0 || all.WindowSeconds != traffic.Window.Seconds() ||
		all.BucketSeconds != traffic.BucketWidth.Seconds() || all.RateSeconds != traffic.RateWindow.Seconds() {
		t.Fatalf("before any request: %s", rec.Body)
	}

	rt, ok := h.rt.Snapshot().Route("app")
	if !ok {
		t.Fatal("route app not routed")
	}
	now := time.Now().UnixNano()
	for i := range 4 {
		rt.State().Traffic().Record(now, 20*time.Millisecond, i == 0)
		rt.Backends()[0].State().Traffic().Record(now, 20*time.Millisecond, i == 0)
	}

	rec = h.do(http.MethodGet, "/traffic", "", "")
	wantStatus(t, rec, http.StatusOK)
	if err := json.Unmarshal(rec.Body.Bytes(), &all); err != nil {
		t.Fatal(err)
	}
	if len(all.Routes) != 1 || all.Routes[0].Route != "app" {
		t.Fatalf("routes %s, want app", rec.Body)
	}
	got := all.Routes[0]
	if got.Requests != 4 || got.Errors != 1 || got.ErrorRatio != 0.25 || got.P50Ms <= 10 || got.P50Ms > 25 {
		t.Errorf("app: %+v; want 4 requests, 1 error, p50 in (10, 25] ms", got.TrafficFigures)
	}
	if len(got.Backends) != 1 || got.Backends[0].Backend != "10.0.0.5:8080" || got.Backends[0].Requests != 4 {
		t.Errorf("backends %+v, want 10.0.0.5:8080 with 4 requests", got.Backends)
	}

	rec = h.do(http.MethodGet, "/traffic/app", "", "")
	wantStatus(t, rec, http.StatusOK)
	var one status.RouteTraffic
	if err := json.Unmarshal(rec.Body.Bytes(), &one); err != nil {
		t.Fatal(err)
	}
	if one.Route != "app" || one.Requests != 4 || len(one.Points) != traffic.Buckets {
		t.Errorf("GET /traffic/app = %s", rec.Body)
	}
	wantStatus(t, h.do(http.MethodGet, "/traffic/nope", "", ""), http.StatusNotFound)
}

// GET /events/recent holds what happened before the caller asked: here
// the creation of the route.
func TestRealRecentEvents(t *testing.T) {
	h := newRealHarness(t, filepath.Join(t.TempDir(), "state.json"))
	wantStatus(t, h.post(seedPayload), http.StatusCreated)
	rec := h.do(http.MethodGet, "/events/recent", "", "")
	wantStatus(t, rec, http.StatusOK)
	var got struct {
		Size   int `json:"size"`
		Events []struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		} `json:"events"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Size != 200 {
		t.Errorf("size %d, want 200", got.Size)
	}
	for _, e := range got.Events {
		var d status.RouteEvent
		if e.Type == status.EventRoute && json.Unmarshal(e.Data, &d) == nil && d.Route == "app" && d.Change == "added" {
			return
		}
	}
	t.Fatalf("no route app added in %s", rec.Body)
}

// A stream opened after GET /events/recent's last_id starts with what
// happened in between (here a breaker forced open before the stream
// opened), each event with its id, and then carries the live events.
func TestRealEventsResumeAfterLastID(t *testing.T) {
	h := newRealHarness(t, filepath.Join(t.TempDir(), "state.json"))
	wantStatus(t, h.post(seedPayload), http.StatusCreated)
	rec := h.do(http.MethodGet, "/events/recent", "", "")
	wantStatus(t, rec, http.StatusOK)
	var recent struct {
		LastID string `json:"last_id"`
		Events []struct {
			ID string `json:"id"`
		} `json:"events"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &recent); err != nil {
		t.Fatal(err)
	}
	if recent.LastID == "" || len(recent.Events) == 0 || recent.Events[len(recent.Events)-1].ID == "" {
		t.Fatalf("GET /events/recent without ids: %s", rec.Body)
	}
	// Between the two calls: the event the page would otherwise miss.
	wantStatus(t, h.do("POST", "/breakers/app/open", "", ""), http.StatusOK)

	ts := httptest.NewServer(h.srv)
	defer ts.Close()
	for _, how := range []string{"header", "query"} {
		t.Run(how, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			url := ts.URL + "/events"
			if how == "query" {
				url += "?after=" + recent.LastID
			}
			req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
			if how == "header" {
				req.Header.Set("Last-Event-ID", recent.LastID)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			if !sc.Scan() || sc.Text() != ": subscribed" {
				t.Fatalf("stream opened with %q", sc.Text())
			}
			// The replay comes first: id, event, data, blank.
			var lines []string
			for len(lines) < 3 && sc.Scan() {
				if sc.Text() != "" {
					lines = append(lines, sc.Text())
				}
			}
			if len(lines) < 3 || !strings.HasPrefix(lines[0], "id: ") || lines[0] == "id: "+recent.LastID || lines[1] != "event: "+status.EventBreaker {
				t.Fatalf("stream began with %q, want the breaker event after %s", lines, recent.LastID)
			}
			var ev struct {
				ID   string              `json:"id"`
				Data status.BreakerEvent `json:"data"`
			}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(lines[2], "data: ")), &ev); err != nil {
				t.Fatal(err)
			}
			if ev.ID != strings.TrimPrefix(lines[0], "id: ") || ev.Data.Route != "app" || ev.Data.To != "open" {
				t.Fatalf("replayed %q", lines)
			}
		})
	}
}

// A route's traffic view carries its gRPC calls by method and status
// name once it has served one (the request path records them in the
// route's tally); before that the field is left out.
func TestRealTrafficGRPCMethods(t *testing.T) {
	h := newRealHarness(t, filepath.Join(t.TempDir(), "state.json"))
	wantStatus(t, h.post(seedPayload), http.StatusCreated)
	rt, ok := h.rt.Snapshot().Route("app")
	if !ok {
		t.Fatal("route app not routed")
	}
	rt.State().Traffic().Record(time.Now().UnixNano(), time.Millisecond, false)
	rec := h.do(http.MethodGet, "/traffic/app", "", "")
	wantStatus(t, rec, http.StatusOK)
	if strings.Contains(rec.Body.String(), `"grpc"`) {
		t.Fatalf("before any gRPC call: %s", rec.Body)
	}

	for range 2 {
		rt.State().GRPC().Record("shop.Cart/Add", 0)
	}
	rt.State().GRPC().Record("shop.Cart/Add", 14)
	rt.State().GRPC().Record("shop.Cart/Pay", -1)
	rec = h.do(http.MethodGet, "/traffic/app", "", "")
	wantStatus(t, rec, http.StatusOK)
	var got struct {
		GRPC struct {
			Methods []struct {
				Method   string            `json:"method"`
				Statuses map[string]uint64 `json:"statuses"`
			} `json:"methods"`
		} `json:"grpc"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprint(got.GRPC.Methods); s != "[{shop.Cart/Add map[OK:2 UNAVAILABLE:1]} {shop.Cart/Pay map[none:1]}]" {
		t.Errorf("GET /traffic/app grpc methods %s, want Add (2 OK, 1 UNAVAILABLE) then Pay (1 none):\n%s", s, rec.Body)
	}
	rec = h.do(http.MethodGet, "/traffic", "", "")
	if !strings.Contains(rec.Body.String(), `"grpc":{"methods":[{"method":"shop.Cart/Add","statuses":{"OK":2,"UNAVAILABLE":1}}`) {
		t.Errorf("GET /traffic lacks app's grpc methods: %s", rec.Body)
	}
}
