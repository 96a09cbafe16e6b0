package status

import "time"

// Traffic is the recent traffic of every route that served requests since
// its state was made: the router's in-memory rings (package
// router/traffic), gone at restart and not Prometheus.
type Traffic struct {
	// BucketSeconds is the span of one point, WindowSeconds the span of
	// every figure but the rate, RateSeconds the span of the rate.
	BucketSeconds float64        `json:"bucket_seconds"`
	WindowSeconds float64        `json:"window_seconds"`
	RateSeconds   float64        `json:"rate_seconds"`
	Routes        []RouteTraffic `json:"routes"`
}

// RouteTraffic is one route's traffic and that of each of its backends.
type RouteTraffic struct {
	Route string `json:"route"`
	TrafficFigures
	// Backends are the route's current backends ("address:port"), each
	// counting the requests it gave the answer to.
	Backends []BackendTraffic `json:"backends"`
	// GRPC is the route's gRPC calls, nil (left out) for a route that
	// has served none.
	GRPC *GRPCTraffic `json:"grpc,omitempty"`
}

// GRPCTraffic is a route's gRPC calls since its state was made (not
// windowed; gone at restart), by method and the status their client read.
type GRPCTraffic struct {
	// Methods are at most 32 named methods, most called first, then
	// "other" counting the calls to any further method.
	Methods []GRPCMethodTraffic `json:"methods"`
}

// GRPCMethodTraffic is one method's calls ("pkg.Service/Method") by the
// name of their status (OK, UNAVAILABLE...; "none" for a call whose
// answer ended without one); statuses with no call are left out.
type GRPCMethodTraffic struct {
	Method   string            `json:"method"`
	Statuses map[string]uint64 `json:"statuses"`
}

// BackendTraffic is one backend's traffic within a route.
type BackendTraffic struct {
	Backend string `json:"backend"`
	TrafficFigures
}

// TrafficFigures are the figures of one ring. An error is an answer with
// a 5xx status, Levee's own (circuit open, no healthy backend) included; a
// client that left (499) is not one.
type TrafficFigures struct {
	// Requests and Errors are totals over the window.
	Requests   uint64  `json:"requests"`
	Errors     uint64  `json:"errors"`
	ErrorRatio float64 `json:"error_ratio"`
	// RPS is requests per second over the last RateSeconds.
	RPS float64 `json:"rps"`
	// P50Ms and P99Ms are the latency to response headers (milliseconds)
	// over the window, estimated within a histogram bucket.
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	// Points are the window's buckets, oldest first, the current
	// (partial) one last.
	Points []TrafficPoint `json:"points"`
}

// TrafficPoint is one bucket: the requests and errors that started in the
// BucketSeconds from Time.
type TrafficPoint struct {
	Time     time.Time `json:"time"`
	Requests uint64    `json:"requests"`
	Errors   uint64    `json:"errors"`
}

// RecentEvents is the router's ring of recent events (every type but
// history), oldest first, for a view that opens after they happened.
type RecentEvents struct {
	// Size is how many events the ring holds at most.
	Size   int     `json:"size"`
	Events []Event `json:"events"`
	// LastID is the id of the last event published (history samples
	// included): a stream opened after it misses nothing in between.
	LastID string `json:"last_id"`
}
