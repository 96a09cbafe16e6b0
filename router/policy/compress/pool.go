package compress

import (
	"io"
	"sync/atomic"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/levee-proxy/levee/router/config"
)

// The bounds of one route's encoder pool, per encoding.
const (
	MaxEncoders = 256
	MaxIdle     = 32
)

// encoder is what the three writers have in common.
type encoder interface {
	io.WriteCloser
	Flush() error
	Reset(w io.Writer)
}

// zstdEncoder adapts zstd.Encoder's Reset, which takes the same
// io.Writer, to encoder (its Close is also the end of a frame).
type zstdEncoder struct{ *zstd.Encoder }

// pool is a bounded pool of encoders of one encoding.
type pool struct {
	name string
	idle chan encoder
	live atomic.Int32 // encoders in existence, idle or in use
	make func() (encoder, error)
}

func newPool(name string) *pool {
	p := &pool{name: name, idle: make(chan encoder, MaxIdle)}
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

// get returns an encoder writing to w, or nil when MaxEncoders exist.
func (p *pool) get(w io.Writer) encoder {
	select {
	case e := <-p.idle:
		e.Reset(w)
		return e
	default:
	}
	if p.live.Add(1) > MaxEncoders {
		p.live.Add(-1)
		return nil
	}
	e, err := p.make()
	if err != nil {
		p.live.Add(-1)
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
		p.live.Add(-1)
	}
}
