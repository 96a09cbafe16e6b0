package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// The state on disk is a snapshot and a log beside it. The snapshot (the
// state file, --state-file) is the whole API set as one JSON document,
// replaced atomically (temp file, fsync, rename, fsync of the directory).
// The log (<state file>.log) holds the changes made since, one record per
// write, appended and fsynced before the write is answered: a write costs
// the size of what it changes, not of the whole set. A record is one line:
//
//	<crc32c of the JSON, 8 hex digits> <JSON {"put":[…],"del":[…]}>\n
//
// A bulk write is one record, so it is all or nothing on disk too. At
// start the snapshot is read, then the log replayed over it. A record is a
// set of puts and deletes of whole entrypoints (the last writer of an id
// wins), so replaying a record the snapshot already holds changes nothing:
// compaction writes a new snapshot first and truncates the log after, and
// a crash between the two is harmless.
//
// A crash in the middle of an append leaves a torn last record: no
// newline, or a checksum that does not match. It was never acknowledged,
// so it is dropped with a warning naming the file and the offset, and the
// log is cut back to the last whole record. A bad record followed by good
// ones is not a torn write but damage: start-up stops with its offset.

// compactMinBytes is the smallest log that is compacted: below it, the
// replay at start costs less than the rewrite.
const compactMinBytes = 1 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Record is one write in the log.
type Record struct {
	Put []stateRecord `json:"put,omitempty"`
	Del []string      `json:"del,omitempty"`
	// PutPolicy and DelPolicy change the named policies (policies.go).
	PutPolicy []stateRecord `json:"put_policy,omitempty"`
	DelPolicy []string      `json:"del_policy,omitempty"`
}

// stateLog is the append side of the log; the store's mutex guards it.
// The file is opened for each append (an open costs microseconds, the
// fsync milliseconds), so that a log moved or removed behind Levee's back
// fails the write instead of going to an unlinked file.
type stateLog struct {
	path string
	size int64
}

// LogPath is the log beside the state file statePath.
func LogPath(statePath string) string { return statePath + ".log" }

// encodeRecord is the line for rec.
func encodeRecord(rec Record) ([]byte, error) {
	js, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	line := make([]byte, 0, len(js)+10)
	line = fmt.Appendf(line, "%08x ", crc32.Checksum(js, castagnoli))
	line = append(line, js...)
	return append(line, '\n'), nil
}

// decodeRecord parses one line (without its newline).
func decodeRecord(line []byte) (Record, error) {
	var rec Record
	sum, js, ok := bytes.Cut(line, []byte{' '})
	if !ok || len(sum) != 8 {
		return rec, errors.New("no checksum")
	}
	want, err := strconv.ParseUint(string(sum), 16, 32)
	if err != nil {
		return rec, errors.New("bad checksum field")
	}
	if got := crc32.Checksum(js, castagnoli); uint64(got) != want {
		return rec, fmt.Errorf("checksum %08x does not match %08x", got, want)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return rec, fmt.Errorf("not a log record: %w", err)
	}
	return rec, nil
}

// ReadLog returns the whole records of the log at path and the size they
// take. A torn last record is reported in torn (a message) and not
// returned; damage before the end is an error.
func ReadLog(path string) (recs []Record, good int64, torn string, err error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, "", nil
	}
	if err != nil {
		return nil, 0, "", fmt.Errorf("cannot read: %w", err)
	}
	for off := 0; off < len(raw); {
		end := bytes.IndexByte(raw[off:], '\n')
		if end < 0 {
			return recs, int64(off), fmt.Sprintf("%d bytes without a newline at offset %d", len(raw)-off, off), nil
		}
		rec, derr := decodeRecord(raw[off : off+end])
		if derr != nil {
			if off+end+1 == len(raw) {
				return recs, int64(off), fmt.Sprintf("record at offset %d: %v", off, derr), nil
			}
			return nil, 0, "", fmt.Errorf("record at offset %d: %w (records follow it: the log is damaged, not torn)", off, derr)
		}
		recs = append(recs, rec)
		off += end + 1
	}
	return recs, int64(len(raw)), "", nil
}

// cutTorn truncates the log at path to size and syncs it.
func cutTorn(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return err
	}
	return f.Sync()
}

// append writes rec durably: the line, then fsync. On failure the log is
// cut back to where it was (best effort), so that a write that was not
// acknowledged does not come back at the next start.
func (l *stateLog) append(rec Record) error {
	line, err := encodeRecord(rec)
	if err != nil {
		return fmt.Errorf("encode log record: %w", err)
	}
	f, err := l.open()
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(line); err != nil {
		l.rollback(f)
		return fmt.Errorf("append to %s: %w", l.path, err)
	}
	if err := f.Sync(); err != nil {
		l.rollback(f)
		return fmt.Errorf("fsync %s: %w", l.path, err)
	}
	l.size += int64(len(line))
	return nil
}

// open opens (creating) the log for appending; a new file's directory
// entry is synced so that the file itself survives a crash.
func (l *stateLog) open() (*os.File, error) {
	_, statErr := os.Stat(l.path)
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", l.path, err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		if err := syncDir(filepath.Dir(l.path)); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

func (l *stateLog) rollback(f *os.File) {
	_ = f.Truncate(l.size)
	_ = f.Sync()
}

// reset empties the log after a compaction.
func (l *stateLog) reset() error {
	f, err := l.open()
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("truncate %s: %w", l.path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", l.path, err)
	}
	l.size = 0
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory %s for fsync: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// replay applies the log's records over the snapshot, dropping a torn
// last record (see log.go).
func (s *Store) replay(codec Codec) error {
	recs, good, torn, err := ReadLog(s.log.path)
	if err != nil {
		return err
	}
	if torn != "" {
		if err := cutTorn(s.log.path, good); err != nil {
			return fmt.Errorf("dropping a torn last record (%s): %w", torn, err)
		}
		s.warn(fmt.Sprintf("state log %s: dropped a torn last record (%s): a write interrupted by a crash, never acknowledged", s.log.path, torn))
	}
	for i, rec := range recs {
		for _, p := range rec.Put {
			if err := s.loadRecord(codec, p); err != nil {
				return fmt.Errorf("record %d: %w", i+1, err)
			}
		}
		for _, id := range rec.Del {
			delete(s.entries, id)
		}
		for _, p := range rec.PutPolicy {
			if err := s.loadPolicy(p); err != nil {
				return fmt.Errorf("record %d: %w", i+1, err)
			}
		}
		for _, name := range rec.DelPolicy {
			delete(s.policies, name)
		}
	}
	s.log.size = good
	return nil
}
