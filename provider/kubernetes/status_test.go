package kubernetes

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/levee-proxy/levee/e2e/logbuf"
	"github.com/levee-proxy/levee/e2e/poll"
	"github.com/levee-proxy/levee/provider"
	"github.com/levee-proxy/levee/router/config"
)

// syncBuffer is a log sink safe for the informers' goroutines.
type syncBuffer struct{ logbuf.Buffer }

// lines counts the log lines holding every one of want.
func (s *syncBuffer) lines(want ...string) int { return len(s.Lines(want...)) }

// eventually polls check until it returns nil, or fails with its last
// error after the deadline.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	poll.UntilNil(t, 30*time.Second, what, check)
}

// connection checks the status, and the levee_provider_* series in reg.
func connection(p *Provider, reg *prometheus.Registry, state provider.State, errHas string) error {
	st := p.Status()
	if st.State != state || !strings.Contains(st.LastError, errHas) || (errHas == "") != (st.LastError == "") {
		return fmt.Errorf("status %+v, want %s with an error holding %q", st, state, errHas)
	}
	mfs, err := reg.Gather()
	if err != nil {
		return err
	}
	wantConnected := 0.0
	if state == provider.StateConnected {
		wantConnected = 1
	}
	seen := 0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["provider"] != config.SourceKubernetes {
				return fmt.Errorf("%s has provider=%q", mf.GetName(), labels["provider"])
			}
			v := m.GetGauge().GetValue()
			switch {
			case mf.GetName() == provider.ReconnectsMetric:
			case mf.GetName() == provider.ConnectedMetric && v != wantConnected:
				return fmt.Errorf("%s = %v, want %v", provider.ConnectedMetric, v, wantConnected)
			case mf.GetName() == provider.StateMetric && (v == 1) != (labels["state"] == string(state)):
				return fmt.Errorf("%s{state=%q} = %v in state %s", provider.StateMetric, labels["state"], v, state)
			}
			seen++
		}
	}
	if seen != 5 {
		return fmt.Errorf("%d series, want connected, three states and reconnects", seen)
	}
	return nil
}

// reconnects checks levee_provider_reconnects_total{provider="kubernetes"}
// in reg and the status's Reconnects.
func reconnects(t *testing.T, p *Provider, reg *prometheus.Registry, want float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := -1.0
	for _, mf := range mfs {
		if mf.GetName() != provider.ReconnectsMetric {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "provider" && l.GetValue() == config.SourceKubernetes {
					got = m.GetCounter().GetValue()
				}
			}
		}
	}
	if got != want || p.Status().Reconnects != uint64(want) {
		t.Errorf("%s{provider=%q} = %v, status Reconnects %d; want %v", provider.ReconnectsMetric, config.SourceKubernetes, got, p.Status().Reconnects, want)
	}
}

// forbidden is what the API server answers a service account without
// RBAC for the resource.
func forbidden(resource string) error {
	return apierrors.NewForbidden(schema.GroupResource{Group: "networking.k8s.io", Resource: resource}, "",
		fmt.Errorf("User \"system:serviceaccount:levee:levee\" cannot list resource %q", resource))
}

// A watch ended by a 410 Gone whose relist is refused (403 Forbidden)
// makes the provider disconnected, in its status and its metrics, with one
// error line for the failure and its retries; the routes stay. Once the list is
// allowed again it is connected.
func TestWatchFailureDisconnectsAndRecovers(t *testing.T) {
	client := clientWith(t, ingress("levee", "shop.example.com", nil), service(), slice(false))
	var refuse atomic.Bool
	var lists atomic.Int32
	client.PrependReactor("list", "ingresses", func(k8stesting.Action) (bool, runtime.Object, error) {
		lists.Add(1)
		if refuse.Load() {
			return true, nil, forbidden("ingresses")
		}
		return false, nil, nil
	})
	first, _ := firstIngressWatch(client)
	reg := prometheus.NewRegistry()
	logs := &syncBuffer{}
	p, s := runProvider(t, Options{Client: client, Registerer: reg, Logger: zerolog.New(logs)})
	s.waitFor(t, "the route", func(u config.SourceUpdate) bool { return len(u.Entrypoints) == 1 })
	eventually(t, "connected", func() error { return connection(p, reg, provider.StateConnected, "") })
	reconnects(t, p, reg, 0)
	connectedSince := p.Status().Since

	refuse.Store(true)
	first.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"})
	eventually(t, "disconnected", func() error { return connection(p, reg, provider.StateDisconnected, "forbidden") })
	reconnects(t, p, reg, 0)
	// client-go's backoff (800 ms doubling, jittered, not configurable
	// through an informer) makes each retry slower: one is enough to
	// show that a retry logs no second error line.
	eventually(t, "a retry", func() error {
		if n := lists.Load(); n < 3 { // the first list, the relist, a retry
			return fmt.Errorf("%d lists", n)
		}
		return nil
	})
	if n := logs.lines(`"level":"error"`, "forbidden"); n != 1 {
		t.Errorf("%d error lines for one outage, want 1:\n%s", n, logs.String())
	}
	if st := p.Status(); !st.Since.After(connectedSince) || st.Retries < 2 {
		t.Errorf("status %+v: Since should date the outage, Retries count the failures", st)
	}
	s.mu.Lock()
	kept := len(s.last.Entrypoints) == 1 && len(s.last.Entrypoints[0].Backends) == 2
	s.mu.Unlock()
	if !kept {
		t.Fatalf("the route changed while disconnected: %+v", s.last)
	}

	refuse.Store(false)
	eventually(t, "connected again", func() error { return connection(p, reg, provider.StateConnected, "") })
	reconnects(t, p, reg, 1)
	if n := logs.lines(`"level":"info"`, "connected to the API server again"); n != 1 {
		t.Errorf("%d reconnection lines, want 1:\n%s", n, logs.String())
	}
}

// An API server that refuses the first list leaves the provider
// disconnected and not synced (nothing was read), until it answers.
func TestUnreachableAtStartIsDisconnectedUntilListed(t *testing.T) {
	client := clientWith(t, ingress("levee", "shop.example.com", nil), service(), slice(false))
	var refuse atomic.Bool
	refuse.Store(true)
	client.PrependReactor("list", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
		if refuse.Load() {
			return true, nil, fmt.Errorf("dial tcp 10.96.0.1:443: connect: connection refused")
		}
		return false, nil, nil
	})
	reg := prometheus.NewRegistry()
	p, s := runProvider(t, Options{Client: client, Registerer: reg, Logger: zerolog.Nop()})
	eventually(t, "disconnected", func() error { return connection(p, reg, provider.StateDisconnected, "connection refused") })
	if p.Synced() {
		t.Fatal("synced without a list of the Services")
	}
	refuse.Store(false)
	eventually(t, "connected", func() error { return connection(p, reg, provider.StateConnected, "") })
	reconnects(t, p, reg, 1)
	s.waitFor(t, "the route", func(u config.SourceUpdate) bool {
		return len(u.Entrypoints) == 1 && len(u.Entrypoints[0].Backends) == 2
	})
}

// firstIngressWatch makes the client's first watch of Ingresses a fake
// the test ends as it likes; it counts the watches opened.
func firstIngressWatch(client *fake.Clientset) (first *watch.FakeWatcher, watches *atomic.Int32) {
	first = watch.NewFakeWithChanSize(1, false)
	watches = new(atomic.Int32)
	client.PrependWatchReactor("ingresses", func(k8stesting.Action) (bool, watch.Interface, error) {
		if watches.Add(1) == 1 {
			return true, first, nil
		}
		return false, nil, nil
	})
	return first, watches
}

// A watch ended by a 410 Gone whose relist succeeds is routine: the
// provider passes through connecting, never disconnected, and that is not
// a reconnection.
func TestRelistIsNotAReconnect(t *testing.T) {
	client := clientWith(t, ingress("levee", "shop.example.com", nil), service(), slice(false))
	first, watches := firstIngressWatch(client)
	reg := prometheus.NewRegistry()
	p, s := runProvider(t, Options{Client: client, Registerer: reg, Logger: zerolog.Nop()})
	s.waitFor(t, "the route", func(u config.SourceUpdate) bool { return len(u.Entrypoints) == 1 })
	eventually(t, "connected", func() error { return connection(p, reg, provider.StateConnected, "") })
	first.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"})
	eventually(t, "the watch opened again", func() error {
		if n := watches.Load(); n < 2 {
			return fmt.Errorf("%d watches", n)
		}
		return connection(p, reg, provider.StateConnected, "")
	})
	reconnects(t, p, reg, 0)
}

// A list answered 410 Gone (the resource version it asked for compacted
// away; client-go lists again at once from the latest) is a routine
// relist too: no failed request, no error line, not a reconnection.
func TestExpiredListIsNotAnOutage(t *testing.T) {
	client := clientWith(t, ingress("levee", "shop.example.com", nil), service(), slice(false))
	first, watches := firstIngressWatch(client)
	var lists atomic.Int32
	client.PrependReactor("list", "ingresses", func(k8stesting.Action) (bool, runtime.Object, error) {
		if lists.Add(1) == 2 { // the relist after the watch's 410
			return true, nil, apierrors.NewResourceExpired("The resourceVersion for the provided list is too old.")
		}
		return false, nil, nil
	})
	reg := prometheus.NewRegistry()
	logs := &syncBuffer{}
	p, s := runProvider(t, Options{Client: client, Registerer: reg, Logger: zerolog.New(logs)})
	s.waitFor(t, "the route", func(u config.SourceUpdate) bool { return len(u.Entrypoints) == 1 })
	eventually(t, "connected", func() error { return connection(p, reg, provider.StateConnected, "") })
	first.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"})
	eventually(t, "the watch opened again", func() error {
		if n := watches.Load(); n < 2 {
			return fmt.Errorf("%d watches", n)
		}
		return connection(p, reg, provider.StateConnected, "")
	})
	if n := lists.Load(); n < 3 {
		t.Fatalf("%d lists, want the first, the expired relist and the relist from the latest", n)
	}
	reconnects(t, p, reg, 0)
	if st := p.Status(); st.Retries != 0 {
		t.Errorf("status %+v: an expired list counted as a failed request", st)
	}
	if n := logs.lines(`"level":"error"`); n != 0 {
		t.Errorf("%d error lines for a routine relist:\n%s", n, logs.String())
	}
}
