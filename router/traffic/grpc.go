package traffic

import (
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// GRPC tally shape: the distinct methods counted by name, and the
// status slots of each (codes 0-16 and one for a call that got none).
const (
	// MaxGRPCMethods is how many distinct methods a tally names; calls
	// to any further method are counted under GRPCOtherMethod, so a
	// client sending arbitrary paths cannot grow it.
	MaxGRPCMethods = 32
	// GRPCOtherMethod is the name the calls past MaxGRPCMethods are
	// counted under.
	GRPCOtherMethod = "other"
	// GRPCStatusSlots is a method's count slots: one per code 0-16,
	// then GRPCNoStatus.
	GRPCStatusSlots = 18
	// GRPCNoStatus is the slot of a call whose answer ended without a
	// status.
	GRPCNoStatus = GRPCStatusSlots - 1
)

// grpcMethod is one method's counts by status slot.
type grpcMethod [GRPCStatusSlots]atomic.Uint64

// GRPCTally counts a route's gRPC calls by method and the status their
// client read, since it was made. Record of a method already seen is a
// map read and one atomic add, with no lock and no allocation; the first
// call of a method copies the map under a lock (at most MaxGRPCMethods
// times). The zero GRPCTally is empty and ready.
type GRPCTally struct {
	mu      sync.Mutex // serialises adding a method
	methods atomic.Pointer[map[string]*grpcMethod]
	// full is set once MaxGRPCMethods are named: an unseen method goes
	// to other without taking the lock.
	full  atomic.Bool
	other grpcMethod
}

// Record counts one call of method ("pkg.Service/Method") that ended
// with code (0-16; a negative code or one past 16 is GRPCNoStatus).
func (t *GRPCTally) Record(method string, code int) {
	if code < 0 || code >= GRPCNoStatus {
		code = GRPCNoStatus
	}
	if p := t.methods.Load(); p != nil {
		if m, ok := (*p)[method]; ok {
			m[code].Add(1)
			return
		}
	}
	if t.full.Load() {
		t.other[code].Add(1)
		return
	}
	t.add(method)[code].Add(1)
}

// add returns method's counts, naming it if there is room, else other.
func (t *GRPCTally) add(method string) *grpcMethod {
	t.mu.Lock()
	defer t.mu.Unlock()
	var cur map[string]*grpcMethod
	if p := t.methods.Load(); p != nil {
		cur = *p
	}
	if m, ok := cur[method]; ok {
		return m
	}
	if len(cur) >= MaxGRPCMethods {
		t.full.Store(true)
		return &t.other
	}
	next := make(map[string]*grpcMethod, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	m := new(grpcMethod)
	// The key is copied: method may share the memory of the request's
	// whole URL.
	next[strings.Clone(method)] = m
	t.methods.Store(&next)
	return m
}

// GRPCMethodCounts is one method's calls by status slot.
type GRPCMethodCounts struct {
	Method string
	Counts [GRPCStatusSlots]uint64
	Total  uint64
}

// Read returns the methods with their counts, most called first (ties
// by name), other last when it has calls.
func (t *GRPCTally) Read() []GRPCMethodCounts {
	var out []GRPCMethodCounts
	if p := t.methods.Load(); p != nil {
		out = make([]GRPCMethodCounts, 0, len(*p)+1)
		for name, m := range *p {
			out = append(out, m.read(name))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Total != out[j].Total {
			return out[i].Total > out[j].Total
		}
		return out[i].Method < out[j].Method
	})
	if o := t.other.read(GRPCOtherMethod); o.Total > 0 {
		out = append(out, o)
	}
	return out
}

func (m *grpcMethod) read(name string) GRPCMethodCounts {
	c := GRPCMethodCounts{Method: name}
	for i := range m {
		c.Counts[i] = m[i].Load()
		c.Total += c.Counts[i]
	}
	return c
}
