package store

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

func openTestStore(t *testing.T, path string, warn func(string)) *Store {
	t.Helper()
	st, err := Open(Options{Path: path, Codec: fakeCodec(), Sink: nullSink{}, Warn: warn})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return st
}

func fakeEntry(t *testing.T, name, host string) (config.Entrypoint, [][]diagnostics.Diagnostic) {
	t.Helper()
	src := diagnostics.Source{Provider: config.SourceAPI}
	ep, ds, err := fakeDecode(config.FormatJSON, []byte(fmt.Sprintf(`{"name":%q,"config":{"hostnames":[%q]}}`, name, host)), src)
	if err != nil {
		t.Fatal(err)
	}
	return ep, [][]diagnostics.Diagnostic{ds}
}

// A single write appends one record; the snapshot is not rewritten until
// the log outgrows it (and compactMin), and then the log starts empty.
// Reopening gives the same set at every step.
func TestSingleWritesAppendAndCompact(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	st := openTestStore(t, path, nil)
	st.compactMin = 4 << 10
	for i := range 40 {
		ep, ds := fakeEntry(t, fmt.Sprintf("e%02d", i), "h.example")
		if _, err := st.Create(ep, ds[0]); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Fatal("the first write rewrote the snapshot; it should only append")
			}
		}
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no snapshot after %d bytes of log: %v", 40*100, err)
	}
	if st.log.size >= max(st.compactMin, st.snapSize) {
		t.Fatalf("log of %d bytes not compacted (snapshot %d)", st.log.size, st.snapSize)
	}
	if err := st.Delete("e07"); err != nil {
		t.Fatal(err)
	}
	again := openTestStore(t, path, nil)
	if n := len(again.List()); n != 39 {
		t.Fatalf("reopened store holds %d entrypoints, want 39", n)
	}
	if _, ok := again.Get("e07"); ok {
		t.Fatal("a delete in the log was not replayed")
	}
}

// A torn last record (no newline, or a bad checksum) is dropped with a
// warning naming the log, the log is cut back, and the next write goes on
// from there. Damage before the end stops start-up.
func TestTornLastRecordIsDroppedDamageIsNot(t *testing.T) {
	for name, tail := range map[string]string{
		"no newline":   `1234abcd {"put":[{"id":"x","payload":{"na`,
		"bad checksum": "00000000 {\"del\":[\"a\"]}\n",
		"garbage":      "\x00\x00\x00\x00\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.json")
			st := openTestStore(t, path, nil)
			ep, ds := fakeEntry(t, "a", "a.example")
			if _, err := st.Create(ep, ds[0]); err != nil {
				t.Fatal(err)
			}
			good := readFile(t, LogPath(path))
			appendFile(t, LogPath(path), tail)
			var warned []string
			st2 := openTestStore(t, path, func(m string) { warned = append(warned, m) })
			if _, ok := st2.Get("a"); !ok {
				t.Fatal("the record before the torn one was lost")
			}
			if len(warned) != 1 || !strings.Contains(warned[0], LogPath(path)) || !strings.Contains(warned[0], "torn") {
				t.Fatalf("warnings %q, want one naming %s and the torn record", warned, LogPath(path))
			}
			if got := readFile(t, LogPath(path)); string(got) != string(good) {
				t.Fatalf("log not cut back to its last whole record: %q", got)
			}
			ep, ds = fakeEntry(t, "b", "b.example")
			if _, err := st2.Create(ep, ds[0]); err != nil {
				t.Fatal(err)
			}
			if n := len(openTestStore(t, path, nil).List()); n != 2 {
				t.Fatalf("after a write past the cut: %d entrypoints, want 2", n)
			}
		})
	}
	t.Run("damage in the middle", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.json")
		appendFile(t, LogPath(path), "00000000 {\"del\":[\"a\"]}\n")
		line, _ := encodeRecord(Record{Del: []string{"b"}})
		appendFile(t, LogPath(path), string(line))
		before := readFile(t, LogPath(path))
		_, err := Open(Options{Path: path, Codec: fakeCodec(), Sink: nullSink{}})
		if err == nil || !strings.Contains(err.Error(), LogPath(path)) || !strings.Contains(err.Error(), "offset 0") {
			t.Fatalf("error %v, want one naming the log and the offset", err)
		}
		if got := readFile(t, LogPath(path)); string(got) != string(before) {
			t.Fatal("a damaged log was modified")
		}
	})
}

// Compaction writes the snapshot before it empties the log: a crash in
// between replays records the snapshot already holds, which changes
// nothing.
func TestReplayOverSnapshotThatHoldsItIsHarmless(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	st := openTestStore(t, path, nil)
	for _, n := range []string{"a", "b", "c"} {
		ep, ds := fakeEntry(t, n, n+".example")
		if _, err := st.Create(ep, ds[0]); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Delete("b"); err != nil {
		t.Fatal(err)
	}
	logged := readFile(t, LogPath(path))
	st.mu.Lock()
	if err := st.compact(); err != nil {
		t.Fatal(err)
	}
	st.mu.Unlock()
	if err := os.WriteFile(LogPath(path), logged, 0o600); err != nil { // the truncate "did not happen"
		t.Fatal(err)
	}
	got := openTestStore(t, path, nil).List()
	if len(got) != 2 || got[0].Entrypoint.ID != "a" || got[1].Entrypoint.ID != "c" {
		t.Fatalf("after replay over the snapshot: %v, want a and c", ids(got))
	}
}

func ids(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Entrypoint.ID)
	}
	return out
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// The durability test: a writer process makes single and bulk writes as
// fast as it can, printing each acknowledged one, and is killed with
// SIGKILL at a random moment; the store reopened must hold every
// acknowledged write. 100 cycles, with a small compaction threshold so
// that kills also land in compactions.
func TestAcknowledgedWritesSurviveKill9(t *testing.T) {
	if os.Getenv("LEVEE_STORE_WRITER") != "" {
		storeWriter(t, os.Getenv("LEVEE_STORE_WRITER"))
		return
	}
	cycles := 100
	if testing.Short() {
		cycles = 10
	}
	path := filepath.Join(t.TempDir(), "state.json")
	acked := map[string]bool{} // id → present (true) or deleted (false)
	for cycle := range cycles {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAcknowledgedWritesSurviveKill9$", "-test.count=1")
		cmd.Env = append(os.Environ(), "LEVEE_STORE_WRITER="+path, fmt.Sprintf("LEVEE_STORE_CYCLE=%d", cycle))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		lines, stopAt := 0, 5+cycle%37
		var pending []string // the ids of the write under way: not acknowledged
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 2 {
				continue
			}
			switch f[0] {
			case "begin":
				pending = f[2:]
			case "put", "del":
				for _, id := range f[1:] {
					acked[id] = f[0] == "put"
				}
				pending = nil
				if lines++; lines == stopAt {
					_ = cmd.Process.Signal(syscall.SIGKILL)
				}
			}
		}
		_ = cmd.Wait()
		st := openTestStore(t, path, nil)
		for _, id := range pending { // either outcome is right; go on from what is there
			_, ok := st.Get(id)
			acked[id] = ok
		}
		for id, present := range acked {
			if _, ok := st.Get(id); ok != present {
				t.Fatalf("cycle %d: %s present=%v after kill -9, acknowledged present=%v", cycle, id, ok, present)
			}
		}
	}
	if len(acked) < cycles {
		t.Fatalf("only %d ids acknowledged over %d cycles: the writer did not run", len(acked), cycles)
	}
}

// storeWriter is the child of TestAcknowledgedWritesSurviveKill9: it
// writes until killed, printing "begin op id…" before each write and
// "put id…" or "del id…" once it is acknowledged.
func storeWriter(t *testing.T, path string) {
	cycle, _ := strconv.Atoi(os.Getenv("LEVEE_STORE_CYCLE"))
	st := openTestStore(t, path, nil)
	st.compactMin = 8 << 10
	for i := 0; i < 1_000_000; i++ { // the parent kills it long before
		id := fmt.Sprintf("c%03d-%04d", cycle, i)
		switch i % 4 {
		case 0, 1: // single create
			fmt.Println("begin put", id)
			ep, ds := fakeEntry(t, id, "w.example")
			if _, err := st.Create(ep, ds[0]); err != nil {
				t.Fatal(err)
			}
			fmt.Println("put", id)
		case 2: // bulk create of three
			var cs []Change
			var names []string
			for k := range 3 {
				n := fmt.Sprintf("%s-%d", id, k)
				ep, ds := fakeEntry(t, n, "b.example")
				cs = append(cs, Change{Op: OpCreate, Entrypoint: ep, Diagnostics: ds[0]})
				names = append(names, n)
			}
			fmt.Println("begin put", strings.Join(names, " "))
			if _, _, err := st.Apply(cs, false); err != nil {
				t.Fatal(err)
			}
			fmt.Println("put", strings.Join(names, " "))
		case 3: // bulk delete of the previous single
			prev := fmt.Sprintf("c%03d-%04d", cycle, i-2)
			fmt.Println("begin del", prev)
			if _, _, err := st.Apply([]Change{{Op: OpDelete, ID: prev}}, false); err != nil {
				t.Fatal(err)
			}
			fmt.Println("del", prev)
		}
	}
}

// A compaction that fails is only a warning: the write is acknowledged
// (the log holds it) and nothing is lost.
func TestFailedCompactionKeepsTheLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	var warned []string
	st := openTestStore(t, path, func(m string) { warned = append(warned, m) })
	st.compactMin = 1
	if err := os.Mkdir(path, 0o700); err != nil { // the rename over it fails
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b"} {
		ep, ds := fakeEntry(t, n, n+".example")
		if _, err := st.Create(ep, ds[0]); err != nil {
			t.Fatalf("create %s: %v (a failed compaction must not fail the write)", n, err)
		}
	}
	if len(warned) == 0 || !strings.Contains(warned[0], "compaction failed") {
		t.Fatalf("warnings %q, want the failed compaction", warned)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if n := len(openTestStore(t, path, nil).List()); n != 2 {
		t.Fatalf("after failed compactions: %d entrypoints, want 2 from the log", n)
	}
}
