// Package traffic keeps the recent traffic of a route or a backend for the
// API and the dashboard: requests per second, error ratio and latency
// percentiles over the last minutes.
//
// The model: a Ring is a fixed array of Buckets buckets, each BucketWidth
// long (30 × 10 s, the last 5 minutes). A bucket holds a request counter,
// an error counter and a fixed latency histogram (LatencyBounds), and
// knows which interval it holds by its epoch: the clock time divided by
// BucketWidth. Recording a request finds its bucket by the request's
// start time, reuses the bucket if it still holds an interval a full
// ring ago, and adds with atomics: no lock, no allocation, no goroutine.
// Reading sums the buckets whose epoch falls in the last Window; a
// bucket nobody wrote to since is expired and reads as zero, so an idle
// route fades to zero without anything sweeping it.
//
// Time comes from the caller (clock nanoseconds), never from the package:
// the proxy passes its injected clock's reading, tests a fake one. A ring
// is about 2 KB; the router makes one for a route or backend when it first
// serves a request, so idle routes cost nothing.
//
// It imports only the standard library.
package traffic
