package status

import "time"

// BreakerHistory is one breaker's recent traffic: what its requests and
// failure counters did over the last minutes, one point per sampling
// interval, oldest first. The router keeps it in memory only (a bounded
// ring per breaker); it is gone at restart and is not Prometheus.
type BreakerHistory struct {
	// Route and Backend identify the breaker as in BreakerStatus.
	Route   string `json:"route"`
	Backend string `json:"backend,omitempty"`
	Name    string `json:"name"`
	// Points are oldest first; each covers the interval that ends at its
	// Time.
	Points []HistoryPoint `json:"points"`
}

// HistoryPoint is one sampling interval of a breaker.
type HistoryPoint struct {
	// Time is when the interval ended (the sample was taken).
	Time time.Time `json:"time"`
	// Requests is how many requests reached the breaker in the interval:
	// admitted and rejected alike.
	Requests uint64 `json:"requests"`
	// Failures is how many admitted requests it counted as failures.
	Failures uint64 `json:"failures"`
}

// History is the router's history of every breaker.
type History struct {
	// IntervalSeconds is the sampling interval.
	IntervalSeconds float64 `json:"interval_seconds"`
	// Samples is how many points a breaker's ring holds at most.
	Samples  int              `json:"samples"`
	Breakers []BreakerHistory `json:"breakers"`
}
