package api

import (
	"fmt"
	"net/http"

	"github.com/levee-proxy/levee/router/status"
)

// Schema components of the traffic and recent-events answers.
const (
	schemaTraffic      = "Traffic"
	schemaRouteTraffic = "RouteTraffic"
	schemaRecent       = "RecentEvents"
)

// trafficRoutes are the endpoints of recent traffic and recent events.
func (s *Server) trafficRoutes() []route {
	return []route{
		{method: "GET", path: "/traffic", op: "traffic", summary: "Recent traffic of every route that served requests, and of each of its backends: requests per second, error ratio, p50/p99 latency and 10-second points over the last 5 minutes (in memory; gone at restart).", access: accessRead,
			responses: with(accessRead, response{200, schemaTraffic, "every route's traffic, ordered by id"}), handler: s.traffic},
		{method: "GET", path: "/traffic/{route}", op: "routeTraffic", summary: "One route's recent traffic and that of each of its backends (zero figures before its first request).", access: accessRead,
			responses: with(accessRead, response{200, schemaRouteTraffic, "the route's traffic"}, response{404, schemaError, "no such route"}), handler: s.routeTraffic},
		{method: "GET", path: "/events/recent", op: "recentEvents", summary: "The last events GET /events carried (breaker transitions, route, diagnostic and fallback changes; not history samples), oldest first, from a ring of fixed size.", access: accessRead,
			responses: with(accessRead, response{200, schemaRecent, "the recent events"}), handler: s.recentEvents},
	}
}

func (s *Server) traffic(w http.ResponseWriter, r *http.Request, _ string) {
	t := s.router.Traffic()
	if t.Routes == nil {
		t.Routes = []status.RouteTraffic{}
	}
	writeJSON(w, http.StatusOK, t)
}

func (s *Server) routeTraffic(w http.ResponseWriter, r *http.Request, _ string) {
	id := r.PathValue("route")
	t, ok := s.router.RouteTraffic(id)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no route %q", id), nil)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

func (s *Server) recentEvents(w http.ResponseWriter, r *http.Request, _ string) {
	rec := s.router.RecentEvents()
	if rec.Events == nil {
		rec.Events = []status.Event{}
	}
	writeJSON(w, http.StatusOK, rec)
}

// trafficSchemas are the components of trafficRoutes' answers.
func trafficSchemas() obj {
	point := obj{"type": "object", "properties": obj{
		"time":     obj{"type": "string", "format": "date-time", "description": "start of the point's interval"},
		"requests": obj{"type": "integer"},
		"errors":   obj{"type": "integer", "description": "answers with a 5xx status, Levee's own included"},
	}}
	figures := obj{
		"requests":    obj{"type": "integer", "description": "over the window"},
		"errors":      obj{"type": "integer", "description": "answers with a 5xx status over the window, Levee's own (circuit open, no healthy backend) included; 499 (client left) is not one"},
		"error_ratio": obj{"type": "number"},
		"rps":         obj{"type": "number", "description": "requests per second over the last rate_seconds"},
		"p50_ms":      obj{"type": "number", "description": "median latency to response headers over the window, estimated within a histogram bucket"},
		"p99_ms":      obj{"type": "number", "description": "99th percentile latency to response headers over the window"},
		"points":      obj{"type": "array", "description": "oldest first; the last is the current, partial bucket", "items": point},
	}
	backend := obj{"type": "object", "properties": obj{"backend": obj{"type": "string", "example": "10.0.0.5:8080"}}}
	routeProps := obj{"route": obj{"type": "string"},
		"backends": obj{"type": "array", "description": "each backend counts the requests it gave the answer to", "items": backend},
		"grpc":     grpcTrafficSchema()}
	for k, v := range figures {
		routeProps[k] = v
		backend["properties"].(obj)[k] = v
	}
	return obj{
		schemaRouteTraffic: obj{"type": "object", "properties": routeProps},
		schemaTraffic: obj{"type": "object", "properties": obj{
			"bucket_seconds": obj{"type": "number", "description": "span of one point (10)"},
			"window_seconds": obj{"type": "number", "description": "span of the totals and percentiles (300)"},
			"rate_seconds":   obj{"type": "number", "description": "span of rps (60)"},
			"routes":         obj{"type": "array", "items": ref(schemaRouteTraffic)},
		}},
		schemaRecent: obj{"type": "object", "properties": obj{
			"size": obj{"type": "integer", "description": "the most events the ring keeps (200)"},
			"events": obj{"type": "array", "description": "oldest first, each as GET /events sends it", "items": obj{"type": "object", "properties": obj{
				"type": obj{"type": "string", "enum": []string{"breaker", "route", "diagnostic", "fallback"}},
				"time": obj{"type": "string", "format": "date-time"},
				"data": obj{"type": "object", "additionalProperties": true},
			}}},
		}},
	}
}

// grpcTrafficSchema is a route's gRPC calls by method and status.
func grpcTrafficSchema() obj {
	method := obj{"type": "object", "properties": obj{
		"method": obj{"type": "string", "example": "shop.Cart/Add", "description": "the call's path without its leading slash; \"other\" counts the calls to methods past the first 32"},
		"statuses": obj{"type": "object", "description": "calls by the grpc-status their client read (OK, UNAVAILABLE...; none for a stream that ended without one), Levee's own answers included; statuses with no call left out",
			"additionalProperties": obj{"type": "integer"}, "example": obj{"OK": 120, "UNAVAILABLE": 3}},
	}}
	return obj{"type": "object", "description": "only on a route that served gRPC calls: its calls since its state was made (not windowed; gone at restart)",
		"properties": obj{"methods": obj{"type": "array", "description": "at most 32 methods, most called first, then other", "items": method}}}
}

// withSchemas adds more's components to all.
func withSchemas(all, more obj) obj {
	for k, v := range more {
		all[k] = v
	}
	return all
}
