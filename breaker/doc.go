// Package breaker is a standalone circuit breaker for request/response
// traffic, built for an HTTP proxy but free of any HTTP or proxy dependency
// (standard library only).
//
// # Model
//
// A Breaker holds state only; its behaviour comes from Params, which can be
// swapped at any time with SetParams while the state carries on. A breaker
// is in one of three states:
//
//	          trip rule fires                     cooldown elapsed
//	closed ───────────────────────▶ open ──────────────────────────▶ half-open
//	  ▲                              ▲                                   │
//	  │                              └──── a probe fails ────────────────┤
//	  └───────────── successesToClose probes succeed ────────────────────┘
//
// Admission and outcome are two steps. Admit returns a Decision; when it is
// admitted it carries a Token, and the caller reports what happened with
// Token.Report. A Token is a small value (no allocation) that remembers the
// breaker generation it was issued in, and, in half-open, which probe slot it
// holds. The generation changes on every state transition and only then, so
// an outcome of a request admitted before a transition is ignored: a late
// success cannot close an open breaker and a late failure cannot re-open or
// extend it. Within one generation, a slow failure always counts: windows
// rotate without changing the generation.
//
// # Trip rules
//
// In the closed state, any one of these opens the breaker:
//   - the failure ratio over the window is at least Threshold, once the
//     window holds at least MinRequests outcomes (rule "error_ratio");
//   - ConsecutiveFailures failures in a row (rule "consecutive_failures");
//   - the ratio of calls slower than SlowCallDuration is at least
//     SlowCallThreshold, with the same window and MinRequests (rule
//     "slow_calls").
//
// The window is either count-based (the last MinRequests outcomes, no clock
// read at all) or time-based (Params.Window, ten buckets rolled by the
// monotonic clock).
//
// # Concurrency and cost
//
// In the closed state Admit takes no lock and reads no clock (one atomic
// load, one atomic add); Report takes one mutex and, with a count window,
// reads no clock either. A time window reads the monotonic clock once per
// report (never the wall clock) and divides only when a new bucket starts.
// While open (enforce mode), rejections take no lock: one atomic load and
// one monotonic clock read for Retry-After. Nothing on these paths
// allocates: decisions and tokens are values.
//
// State transitions queue a Transition that is delivered to observers
// after the mutex is released, in order and never concurrently: whichever
// goroutine finds the queue non-empty and nobody delivering becomes the
// deliverer until the queue is empty. No goroutine is ever started by this
// package. See OnTransition for what a callback may do.
//
// # Sharing
//
// A breaker can follow a state decided outside it, for a fleet of
// processes sharing one breaker (Levee's breaker/fleet does it through
// Redis): StartTally and TakeTally hand out the outcomes it accepted
// (Tally), SetFollowing(true) stops it from deciding transitions, and
// Apply moves it to a state decided elsewhere, with the half-open probe
// leases it may use. Both are off by default; see share.go.
//
// # Which API
//
// Admit and Token.Report are the API for anything that serves concurrent
// requests, a proxy first: the Token ties each outcome to its admission,
// so that a late outcome is ignored instead of closing or re-opening the
// breaker, a half-open probe's slot is freed by that probe's own report,
// and a second report of the same admission is ignored. Outcome also
// carries what the rules use beyond success and failure: Elapsed (slow
// calls), RetryAfter (an upstream's Retry-After lengthens the open
// period) and the Neutral result (a cancelled call counts neither way).
//
// New, CanExecute, RecordSuccess and RecordFailure are the classic
// single-step interface (as in the ewrap/breaker package), for code
// written against it or a caller that makes one call at a time. Without a
// token, a record settles whatever is outstanding: in the closed state it
// counts toward the window; in half-open it settles the oldest outstanding
// probe (with none outstanding, it is a probe result of its own); while
// open it is ignored. It cannot tell a late outcome from a current one,
// knows only success and failure, and reads the clock on every record.
//
// The single-step interface is built on the two-step one: CanExecute is
// Admit, and a record goes through the same report path as Token.Report,
// with the token it settles. Every rule has one implementation, and both
// APIs can be used on the same breaker. OnStateChange and SetObserver
// observe transitions whichever API causes them.
package breaker
