package udp

import (
	"net"
	"testing"
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/e2e/poll"
	"github.com/levee-proxy/levee/router/config"
)

// breakerOf returns a breaker that opens after n consecutive failures and
// stays open for a minute.
func breakerOf(t *testing.T, n int) *config.CircuitBreaker {
	t.Helper()
	cb := config.DefaultCircuitBreaker()
	cb.Params.ConsecutiveFailures = n
	cb.Params.Cooldown = time.Minute
	cb.Params.MaxCooldown = time.Minute
	p, errs := cb.Params.Validate()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	cb.Params = p
	return &cb
}

// closedPort is a loopback UDP address where nothing listens: a datagram
// to it is answered with ICMP port unreachable.
func closedPort(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()
	return addr
}

// silentBackend reads datagrams and never answers.
func silentBackend(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
		}
	}()
	return pc.LocalAddr().String()
}

func (h *harness) breaker() *breaker.Breaker {
	h.t.Helper()
	g := h.r.Snapshot().MatchUDP("dns").State().Guard()
	if g == nil {
		h.t.Fatal("the UDP route has no breaker")
	}
	return g.Breaker()
}

func (h *harness) failures(reason string) float64 {
	return value(h.p.failures.WithLabelValues("dns", "dns", reason))
}

func (h *harness) outcomes(outcome string) float64 {
	return value(h.p.sessions.WithLabelValues("dns", "dns", outcome))
}

// waitFor polls cond until it holds, failing after five seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 5*time.Second, what, cond)
}

// send writes one datagram from c to the proxy.
func send(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
}

// A backend port answered by ICMP port unreachable fails each session;
// the failures open the route's breaker, which then drops a new client's
// datagrams without opening a session.
func TestBreakerOpensOnRefusedBackend(t *testing.T) {
	h := newHarness(t, config.UDP{IdleTimeout: time.Minute}, breakerOf(t, 2), closedPort(t))
	for i, c := range []net.Conn{h.client(), h.client()} {
		send(t, c, "q")
		waitFor(t, "a refused session", func() bool { return h.failures(ReasonRefused) == float64(i+1) })
	}
	waitFor(t, "the breaker to open", func() bool { return h.breaker().State() == breaker.Open })
	waitFor(t, "the failed sessions to end", func() bool { return h.l.Sessions() == 0 })
	send(t, h.client(), "q")
	waitFor(t, "a datagram dropped by the open breaker", func() bool { return h.outcomes(OutcomeCircuitOpen) == 1 })
	if got := h.outcomes(OutcomeOpened); got != 2 {
		t.Errorf("%v sessions opened, want 2 (none while open)", got)
	}
	if n := h.l.Sessions(); n != 0 {
		t.Errorf("%d sessions, want 0", n)
	}
	if st := h.breaker().Stats(); st.Failures != 2 || st.Rejected != 1 {
		t.Errorf("breaker failures %d rejected %d, want 2 and 1", st.Failures, st.Rejected)
	}
}

// With udp.circuitBreaker.answerTimeout, a session whose backend never
// answers fails once the timeout has passed and ends; the failures open
// the breaker.
func TestBreakerAnswerTimeout(t *testing.T) {
	h := newHarness(t, config.UDP{IdleTimeout: time.Minute, AnswerTimeout: 50 * time.Millisecond}, breakerOf(t, 2), silentBackend(t))
	for i, c := range []net.Conn{h.client(), h.client()} {
		send(t, c, "q")
		waitFor(t, "an unanswered session", func() bool { return h.failures(ReasonNoAnswer) == float64(i+1) })
	}
	waitFor(t, "the breaker to open", func() bool { return h.breaker().State() == breaker.Open })
	waitFor(t, "the failed sessions to end", func() bool { return h.l.Sessions() == 0 })
	send(t, h.client(), "q")
	waitFor(t, "a datagram dropped by the open breaker", func() bool { return h.outcomes(OutcomeCircuitOpen) == 1 })
	if got := h.failures(ReasonRefused); got != 0 {
		t.Errorf("%v refused, want 0", got)
	}
}

// Without answerTimeout, a silent backend is no failure: the session
// stays open and the breaker closed.
func TestSilentBackendWithoutAnswerTimeout(t *testing.T) {
	h := newHarness(t, config.UDP{IdleTimeout: time.Minute}, breakerOf(t, 1), silentBackend(t))
	c := h.client()
	if got := ask(t, c, "q"); got != "" { // waits a second for a reply
		t.Fatalf("got %q from a silent backend", got)
	}
	if n, st := h.l.Sessions(), h.breaker().Stats(); n != 1 || st.State != breaker.Closed || st.Failures != 0 {
		t.Errorf("%d sessions, breaker %v with %d failures, want 1 session and closed with 0", n, st.State, st.Failures)
	}
}

// A backend that answers keeps the breaker closed: each session is one
// success, however many datagrams it carries, and answers within the
// answer timeout are no failure.
func TestHealthyBackendKeepsBreakerClosed(t *testing.T) {
	h := newHarness(t, config.UDP{IdleTimeout: time.Minute, AnswerTimeout: 2 * time.Second}, breakerOf(t, 1), echoBackend(t, "a"))
	for i := range 4 {
		c := h.client()
		for range 3 {
			if got := ask(t, c, "q"); got != "a:q" {
				t.Fatalf("client %d got %q, want a:q", i, got)
			}
		}
	}
	st := h.breaker().Stats()
	if st.State != breaker.Closed || st.Failures != 0 || st.Successes != 4 {
		t.Errorf("breaker %v with %d failures and %d successes, want closed, 0 and 4", st.State, st.Failures, st.Successes)
	}
	if got := h.failures(ReasonNoAnswer) + h.failures(ReasonRefused); got != 0 {
		t.Errorf("%v session failures, want 0", got)
	}
}
