package compress

import (
	"io"
	"sync/atomic"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/levee-proxy/levee/router/config"
)

// DefaultBudget is the encoder memory of a process when none is given
// (levee serve --compress-memory): about 60 brotli or zstd streams at
// once, or 110 gzip streams.
const DefaultBudget = 128 << 20

// MaxIdle is how many idle encoders of one encoding are kept for reuse.
const MaxIdle = 32

// encoderCost is what one encoder of each encoding holds once it has
// compressed a response (measured: Go heap after writing 256 KiB, rounded
// up): the gzip writer's window and hash chains, zstd's and brotli's
// window and tables at the sizes newPool sets.
var encoderCost = map[string]int64{
	config.EncodingGzip:   1152 << 10,
	config.EncodingBrotli: 2304 << 10,
	config.EncodingZstd:   2176 << 10,
}

// encoder is what the three writers have in common.
type encoder interface {
	io.WriteCloser
	Flush() error
	Reset(w io.Writer)
}

// zstdEncoder adapts zstd.Encoder's Reset, which takes the same
// io.Writer, to encoder (its Close is also the end of a frame).
type zstdEncoder struct{ *zstd.Encoder }

// Encoders are the process's compression encoders: one pool per encoding,
// shared by every route's policy, under one memory budget. An encoder is
// charged to the budget from its making to its dropping, in use or idle;
// past the budget a response is sent uncompressed (never waits, never
// grows memory), after idle encoders of other encodings have been dropped
// to make room. A stalled client holds its encoder for as long as its
// response lasts, so the budget, not the number of routes or of
// connections, bounds what stalled compressed responses can pin.
type Encoders struct {
	budget  int64
	used    atomic.Int64
	refused atomic.Int64
	pools   map[string]*pool // read-only after NewEncoders
}

// NewEncoders returns encoders sharing budget bytes (0 or less: none, so
// every response is sent as it is).
func NewEncoders(budget int64) *Encoders {
	s := &Encoders{budget: max(budget, 0), pools: map[string]*pool{}}
	for _, name := range []string{config.EncodingGzip, config.EncodingBrotli, config.EncodingZstd} {
		s.pools[name] = newPool(s, name)
	}
	return s
}

// Budget is the memory budget in bytes.
func (s *Encoders) Budget() int64 { return s.budget }

// Used is the memory of the encoders in existence, by their cost.
func (s *Encoders) Used() int64 { return s.used.Load() }

// Refused counts the responses that found the budget spent, and so were
// sent uncompressed.
func (s *Encoders) Refused() int64 { return s.refused.Load() }

// reserve charges cost to the budget, dropping idle encoders of other
// pools while that makes room; false when it cannot.
func (s *Encoders) reserve(cost int64, except *pool) bool {
	for {
		if s.used.Add(cost) <= s.budget {
			return true
		}
		s.used.Add(-cost)
		if !s.dropIdle(except) {
			return false
		}
	}
}

// dropIdle drops one idle encoder of a pool other than except.
func (s *Encoders) dropIdle(except *pool) bool {
	for _, p := range s.pools {
		if p == except {
			continue
		}
		select {
		case <-p.idle:
			s.used.Add(-p.cost)
			return true
		default:
		}
	}
	return false
}

// pool is a bounded pool of encoders of one encoding.
type pool struct {
	set  *Encoders
	name string
	cost int64
	idle chan encoder
	make func() (encoder, error)
}

func newPool(set *Encoders, name string) *pool {
	p := &pool{set: set, name: name, cost: encoderCost[name], idle: make(chan encoder, MaxIdle)}
	switch name {
	case config.EncodingGzip:
		p.make = func() (encoder, error) { return gzip.NewWriterLevel(io.Discard, 5) }
	case config.EncodingBrotli:
		p.make = func() (encoder, error) {
			return brotli.NewWriterOptions(io.Discard, brotli.WriterOptions{Quality: 4, LGWin: 18}), nil
		}
	case config.EncodingZstd:
		p.make = func() (encoder, error) {
			e, err := zstd.NewWriter(io.Discard, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(256<<10),
				zstd.WithLowerEncoderMem(true), zstd.WithEncoderLevel(zstd.SpeedDefault))
			if err != nil {
				return nil, err
			}
			return zstdEncoder{e}, nil
		}
	}
	return p
}

// get returns an encoder writing to w, or nil when the budget is spent.
func (p *pool) get(w io.Writer) encoder {
	select {
	case e := <-p.idle:
		e.Reset(w)
		return e
	default:
	}
	if !p.set.reserve(p.cost, p) {
		p.set.refused.Add(1)
		return nil
	}
	e, err := p.make()
	if err != nil {
		p.set.used.Add(-p.cost)
		return nil
	}
	e.Reset(w)
	return e
}

// put returns an encoder; one over MaxIdle is dropped. The encoder is
// pointed at io.Discard so that the pool holds no ResponseWriter.
func (p *pool) put(e encoder) {
	e.Reset(io.Discard)
	select {
	case p.idle <- e:
	default:
		p.set.used.Add(-p.cost)
	}
}
