package fleet

import "time"

// Defaults of the fallback rule (Options.FallbackFlushes, FallbackAfter
// and RejoinFlushes). A single late flush is common on a loaded host with
// a healthy store; a store that missed three flushes in a row and has not
// answered for a second is gone for the breakers' purposes.
const (
	DefaultFallbackFlushes = 3
	DefaultFallbackAfter   = time.Second
	DefaultRejoinFlushes   = 3
)

// linkRule is when a breaker stops and starts following the fleet.
type linkRule struct {
	// fallbackFlushes consecutive failed flushes, with no good one for
	// fallbackAfter, make the breaker judge locally.
	fallbackFlushes int
	fallbackAfter   time.Duration
	// rejoinFlushes consecutive good flushes make a fallen-back breaker
	// follow the fleet again.
	rejoinFlushes int
}

// linkMode is what a breaker does with the fleet state.
type linkMode uint8

const (
	// linkJoining: no flush has succeeded yet; the breaker judges locally
	// and follows the fleet from the first good flush on. A store gone by
	// the fallback rule from the start makes it linkLocal.
	linkJoining linkMode = iota
	// linkFleet: the last flush succeeded; the breaker follows the fleet.
	linkFleet
	// linkLate: flushes failed, too few or too briefly to call the store
	// gone. The breaker keeps the fleet's last state and its lease rules.
	linkLate
	// linkLocal: the store is gone; the breaker judges locally until
	// rejoinFlushes good flushes in a row.
	linkLocal
)

func (m linkMode) String() string {
	switch m {
	case linkJoining:
		return "joining"
	case linkFleet:
		return "fleet"
	case linkLate:
		return "late"
	}
	return "local"
}

// following reports whether a breaker in this mode follows the fleet.
func (m linkMode) following() bool { return m == linkFleet || m == linkLate }

// link judges the store from one breaker's flushes, with hysteresis: a
// late store keeps the fleet's state, only a gone one hands the breaker
// to local judgement, and only a store that answered several times in a
// row gets it back.
type link struct {
	mode     linkMode
	fails    int       // consecutive failed flushes
	goods    int       // consecutive good flushes while local
	lastGood time.Time // end of the last good flush (or the join)
}

// observe records a flush that ended at now, good or not, and returns
// the mode it leads to.
func (l *link) observe(good bool, now time.Time, r linkRule) linkMode {
	if good {
		l.fails = 0
		l.lastGood = now
		switch l.mode {
		case linkLocal:
			if l.goods++; l.goods >= r.rejoinFlushes {
				l.mode, l.goods = linkFleet, 0
			}
		default:
			l.mode = linkFleet
		}
		return l.mode
	}
	l.goods = 0
	l.fails++
	gone := l.fails >= r.fallbackFlushes && now.Sub(l.lastGood) >= r.fallbackAfter
	switch {
	case l.mode.following() && !gone:
		l.mode = linkLate
	case gone:
		l.mode = linkLocal
	}
	return l.mode
}

// fallBack makes the breaker judge locally at once (an answer that makes
// no sense: the fleet state cannot be read at all).
func (l *link) fallBack() {
	l.mode, l.goods = linkLocal, 0
}
