// Package fleet shares circuit breakers across Levee replicas through
// Redis (the "breaker store"): one fleet, one decision, nothing lost.
//
// # Model
//
// Every replica keeps its own breaker.Breaker per route (or backend), and
// the request path only ever talks to it: admission is decided locally
// from the fleet state the breaker holds, and an outcome is a report to
// the local breaker (package breaker's Tally: a few additions under the
// lock the report takes anyway). There is no store round trip on the
// request path.
//
// A flush loop (every FlushInterval, 50ms by default) sends each
// breaker's tally to the store in one pipeline of calls to one Lua script
// per breaker. The script, atomic in Redis, is the only place where the
// fleet's window is written and where the fleet's transitions are
// decided: trip (any rule), open to half-open when the open period ends,
// close after the probes succeed. Its answer is the fleet state, which
// the breaker applies (breaker.Breaker.Apply); a transition is also
// published on the channel <prefix>events, so the other replicas apply
// it at once instead of at their next flush. A replica whose breaker
// follows the fleet never trips, half-opens or closes on its own.
//
// # Keys
//
// Per breaker, under a Redis Cluster hash tag so one script may touch
// them all: <prefix>{name}:state (hash: state, generation, open-until,
// backoff, streak, parameters and their version), :window (hash of
// buckets), :counts (hash: exact success, failure and neutral counts),
// :leases (hash: probe leases and their expiry), and
// :state:batch:<replica>:<n> (a batch id, 10 minutes). Keys expire a day
// after the last flush.
//
// # The fleet window
//
// The fleet judges a time-bucketed window: ten buckets of a tenth of the
// breaker's window each, numbered by the store's own clock (Redis TIME),
// so that replicas' clocks do not matter. An outcome enters the bucket of
// the flush that carries it (up to one flush interval after it happened).
// The ratio rules (error ratio, slow calls) apply to the sum of the
// buckets, once it holds MinRequests outcomes. A breaker configured with
// a count window locally ("the last MinRequests outcomes") gets the fleet
// window Options.Window (10s by default) instead: replicas have no common
// order of their outcomes without a round trip per request, so "the last
// N of the fleet" is not defined; MinRequests still applies. The
// consecutive-failures rule counts batches in arrival order: a batch with
// a success ends the streak and starts it again at the failures after its
// last success; a batch of failures only adds to it.
//
// # Exact counts
//
// Every outcome a breaker accepts is in exactly one batch, and a batch
// carries an id: the script records it (SET NX) before counting, so a
// batch sent again after a lost answer is counted once. A batch that
// failed is retried with the same id at every flush: with its window
// figures for RetryFor (2s), then with its exact counts only (old
// evidence must not trip the fleet), and dropped after 5 minutes
// (levee_breaker_store_batches_dropped_total), before the store forgets
// its id. Outcomes judged locally during a fallback reach the exact counts
// (not the window) when the replica rejoins. A report the breaker itself
// ignores (a late outcome from before a transition) is not an outcome.
//
// # Transitions and probes
//
// A transition is decided once, by the script call that sees it due, and
// announced. A replica learns it from the announcement (one publish to
// every subscriber; New waits, at most Timeout, for Redis to confirm the
// subscription) or, if that was lost, from its next flush's answer:
// within FlushInterval plus one round trip in the worst case. Each
// replica applies only a generation at least as new as the one it has.
//
// In half-open, probe slots are leases in the store: a replica whose
// breaker had to refuse a request for want of a lease asks for leases in
// its next flush, and the script grants at most HalfOpenProbes live
// leases fleet-wide; a probe's report frees its lease, and a lease no
// request used by the replica's next flush is given back
// (breaker.Tally.ReturnedLeases). A lease expires
// ProbeTimeout after it was granted, so a replica that dies holding one
// delays recovery by at most ProbeTimeout. A probe failure re-opens the
// fleet (with backoff); SuccessesToClose successes close it.
//
// Operator actions (open, close, reset through any replica's API) go
// through a second script that records them with a control number and
// announces them; every replica applies each action once, as its own API
// would, so each replica's event stream shows it.
//
// # Store down, slow or garbage
//
// A flush fails with no answer within Timeout, an error, or a reply of
// the wrong shape or from a key of the wrong type. Each breaker judges
// the store from its own flushes with hysteresis (link.go): a failed
// flush makes the store late, not gone. While late the breaker keeps
// following the fleet's last state and its lease rules (its unused
// leases went back with the batch the flush took, and it never grants
// itself a probe slot), so a short stall changes no fleet decision. Only
// Options.FallbackFlushes failures in a row with no good flush for
// Options.FallbackAfter (3 and 1s) hand the breaker back to local
// judgement (breaker.Breaker.SetFollowing(false)): it judges its own
// window, which kept filling all along, and gets diagnostic W075. An
// answer that makes no sense falls back at once (W076): the fleet state
// cannot be read. Options.RejoinFlushes good flushes in a row (3) rejoin:
// the breaker takes the fleet state, and what it counted meanwhile goes
// to the fleet's exact counts only, so a replica that tripped alone
// during the outage does not trip the fleet on rejoining. A script the
// store forgot (SCRIPT FLUSH, a restart) is loaded again transparently.
//
// # Parameters
//
// The store keeps one parameter set per breaker with a version (the time
// this replica first saw it). A replica whose set differs and is older
// gets W077 and the fleet judges with the stored set; a newer set
// replaces the stored one.
package fleet
