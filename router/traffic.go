package router

import (
	"time"

	"github.com/levee-proxy/levee/router/config"

	"github.com/levee-proxy/levee/router/status"
	"github.com/levee-proxy/levee/router/traffic"
)

// Traffic returns the route's ring of recent traffic, making it on first
// use: a route that never serves has none.
func (rs *RouteState) Traffic() *traffic.Ring { return ringOf(&rs.traffic) }

// Traffic returns the backend's ring of recent traffic (the requests it
// gave the answer to), made on first use.
func (s *BackendState) Traffic() *traffic.Ring { return ringOf(&s.traffic) }

// GRPC returns the route's tally of gRPC calls, made on first use: a
// route that never serves gRPC has none.
func (rs *RouteState) GRPC() *traffic.GRPCTally {
	if t := rs.grpc.Load(); t != nil {
		return t
	}
	rs.grpc.CompareAndSwap(nil, new(traffic.GRPCTally))
	return rs.grpc.Load()
}

func ringOf(p *ringPointer) *traffic.Ring {
	if r := p.Load(); r != nil {
		return r
	}
	p.CompareAndSwap(nil, new(traffic.Ring))
	return p.Load()
}

// Traffic returns the recent traffic of every current route that has
// served a request, ordered by id.
func (r *Router) Traffic() status.Traffic {
	now := r.clock.Now().UnixNano()
	out := trafficShape()
	out.Routes = []status.RouteTraffic{}
	for _, rt := range r.snap.Load().routes {
		if rt.state == nil || rt.state.traffic.Load() == nil {
			continue
		}
		out.Routes = append(out.Routes, routeTraffic(rt, now))
	}
	return out
}

// RouteTraffic returns one route's recent traffic (zero figures if it has
// not served yet).
func (r *Router) RouteTraffic(id string) (status.RouteTraffic, bool) {
	rt, ok := r.snap.Load().Route(id)
	if !ok {
		return status.RouteTraffic{}, false
	}
	return routeTraffic(rt, r.clock.Now().UnixNano()), true
}

func trafficShape() status.Traffic {
	return status.Traffic{
		BucketSeconds: traffic.BucketWidth.Seconds(),
		WindowSeconds: traffic.Window.Seconds(),
		RateSeconds:   traffic.RateWindow.Seconds(),
	}
}

func routeTraffic(rt *Route, now int64) status.RouteTraffic {
	out := status.RouteTraffic{Route: rt.ep.ID, Backends: make([]status.BackendTraffic, 0, len(rt.backends))}
	if rt.state != nil {
		out.TrafficFigures = figures(rt.state.traffic.Load(), now)
		out.GRPC = grpcTraffic(rt.state.grpc.Load())
	} else {
		out.TrafficFigures = figures(nil, now)
	}
	for _, b := range rt.backends {
		var ring *traffic.Ring
		if b.st != nil {
			ring = b.st.traffic.Load()
		}
		out.Backends = append(out.Backends, status.BackendTraffic{Backend: b.hostport, TrafficFigures: figures(ring, now)})
	}
	return out
}

// grpcTraffic reads a route's gRPC tally; nil without one or without
// calls.
func grpcTraffic(t *traffic.GRPCTally) *status.GRPCTraffic {
	if t == nil {
		return nil
	}
	methods := t.Read()
	if len(methods) == 0 {
		return nil
	}
	out := &status.GRPCTraffic{Methods: make([]status.GRPCMethodTraffic, len(methods))}
	for i, m := range methods {
		st := make(map[string]uint64)
		for code, n := range m.Counts {
			if n == 0 {
				continue
			}
			name := grpcStatusNone
			if code != traffic.GRPCNoStatus {
				name = config.GRPCCodeName(code)
			}
			st[name] = n
		}
		out.Methods[i] = status.GRPCMethodTraffic{Method: m.Method, Statuses: st}
	}
	return out
}

// grpcStatusNone names the calls that got no status, as
// levee_grpc_responses_total does.
const grpcStatusNone = "none"

// figures reads a ring (nil reads as an empty one).
func figures(ring *traffic.Ring, now int64) status.TrafficFigures {
	if ring == nil {
		ring = &traffic.Ring{}
	}
	s := ring.Read(now)
	f := status.TrafficFigures{
		Requests: s.Requests, Errors: s.Errors, ErrorRatio: s.ErrorRatio(), RPS: s.Rate,
		P50Ms: ms(s.P50), P99Ms: ms(s.P99), Points: make([]status.TrafficPoint, len(s.Points)),
	}
	for i, p := range s.Points {
		f.Points[i] = status.TrafficPoint{Time: p.Start.UTC(), Requests: p.Requests, Errors: p.Errors}
	}
	return f
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
