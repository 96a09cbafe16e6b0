package udp

import (
	"net"
	"strconv"
	"testing"

	"github.com/rs/zerolog"
)

// closeOnly is a backend socket that only closes.
type closeOnly struct{ net.Conn }

func (closeOnly) Close() error { return nil }

// A new client at the bound evicts the least recently active session in
// constant time, whatever the table's size.
func BenchmarkInsertAtBound(b *testing.B) {
	for _, size := range []int{1_000, 100_000} {
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			p := New(Options{Logger: zerolog.Nop()})
			l := p.Listen(nil, "dns")
			newSession := func(i int) *session {
				return &session{key: "10.0." + strconv.Itoa(i), back: closeOnly{}}
			}
			for i := range size {
				l.insert(newSession(i), size)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				l.insert(newSession(size+i), size)
			}
			b.StopTimer()
			if n := l.Sessions(); n != size {
				b.Fatalf("%d sessions, want %d", n, size)
			}
		})
	}
}
