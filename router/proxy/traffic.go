package proxy

import "time"

// recordTraffic counts a finished request in its route's ring of recent
// traffic and in that of the backend that gave the answer (router/traffic;
// the API's GET /traffic and the dashboard read them). An error is a 5xx
// answer, Levee's own included; a client that left is not one. The ring
// takes the request's start on the injected clock, so a test's fake clock
// decides the bucket. A gRPC call is also counted in the route's tally
// by method and the status its client read (the API's grpc field).
func (p *Handler) recordTraffic(x *exchange, status int, latency time.Duration) {
	if x.route == nil {
		return
	}
	rs := x.route.State()
	if rs == nil { // a snapshot built without a router
		return
	}
	now := x.now
	if now == 0 { // answered before serve read the clock
		now = p.clock.Now().UnixNano()
	}
	failed := status >= 500 // 499, a client that left, is not
	rs.Traffic().Record(now, latency, failed)
	if x.isGRPCCall() {
		code, ok := x.grpcStatusCode()
		if !ok {
			code = -1
		}
		rs.GRPC().Record(x.grpcMethod(), code)
	}
	if x.backend != nil {
		if st := x.backend.State(); st != nil {
			st.Traffic().Record(now, latency, failed)
		}
	}
}
