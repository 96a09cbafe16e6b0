package file

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// DefaultMaxFileBytes bounds a config file: a larger one is not read
// (W026) and its last good entrypoints are kept.
const DefaultMaxFileBytes = 1 << 20

// kept is one entrypoint a file contributes, with the diagnostics of the
// version in effect.
type kept struct {
	ep    config.Entrypoint
	diags []diagnostics.Diagnostic
	index int
}

// fileState is what the loader remembers of one file between scans.
type fileState struct {
	// data is the content last read and parsed; a scan that reads the
	// same bytes reuses the result.
	data   []byte
	parsed bool
	// entries are the file's entrypoints in effect (last good ones
	// included); diags are the diagnostics of the last parse.
	entries []kept
	diags   []diagnostics.Diagnostic
	// policies are the file's named policies of its last good parse.
	policies []config.Policy
}

// loader reads the config files and remembers each file's last good
// entrypoints; scan is its one operation. It is not safe for concurrent
// use: the provider's loop owns it.
type loader struct {
	dirs, files []string
	maxBytes    int64
	now         func() time.Time

	state map[string]*fileState
	// seen is when each (file, name) was first read, for the collision
	// order of entrypoints without a created field.
	seen map[seenKey]time.Time
}

type seenKey struct{ file, name string }

func newLoader(dirs, files []string, maxBytes int64, now func() time.Time) *loader {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxFileBytes
	}
	return &loader{dirs: dirs, files: files, maxBytes: maxBytes, now: now,
		state: map[string]*fileState{}, seen: map[seenKey]time.Time{}}
}

// candidate is one file a scan reads: its path as named (the directory
// joined with the entry's name), and whether the operator named it
// (Options.Files) rather than a directory holding it.
type candidate struct {
	path  string
	named bool
}

// scanResult is one scan's complete output.
type scanResult struct {
	entrypoints []config.Entrypoint
	diags       []diagnostics.Diagnostic
	// policies are every file's named policies, by file path; two files
	// declaring one name are two declarations (config.NewPolicySet).
	policies []config.Policy
	// fileOf names the file of each entrypoint, by id.
	fileOf map[string]string
	// problem is the first directory that could not be listed, for the
	// provider's connection state; "" when all were.
	problem error
}

// scan lists the directories, reads every config file (reusing the parse
// of a file whose bytes did not change) and merges their entrypoints.
func (l *loader) scan() scanResult {
	var res scanResult
	var cands []candidate
	for _, dir := range l.dirs {
		found, err := listDir(dir)
		if err != nil {
			res.problem = cmpOr(res.problem, err)
			res.diags = append(res.diags, diagnostics.New(diagnostics.ConfigFileUnread,
				diagnostics.Source{Provider: config.SourceFile, ObjectID: dir, ObjectName: dir}, "", "",
				"the last good entrypoints of its files", fmt.Sprintf("config directory not read: %v", err), ""))
			// Its files keep their last good entrypoints.
			for path := range l.state {
				if filepath.Dir(path) == filepath.Clean(dir) && !slices.Contains(l.files, path) {
					found = append(found, path)
				}
			}
		}
		for _, p := range found {
			cands = append(cands, candidate{path: p})
		}
	}
	for _, f := range l.files {
		cands = append(cands, candidate{path: f, named: true})
	}
	slices.SortFunc(cands, func(a, b candidate) int { return strings.Compare(a.path, b.path) })
	cands = slices.CompactFunc(cands, func(a, b candidate) bool { return a.path == b.path })

	next := make(map[string]*fileState, len(cands))
	type fileEntries struct {
		path    string
		entries []kept
	}
	var all []fileEntries
	for _, c := range cands {
		st, ds := l.readFile(c, l.state[c.path])
		next[c.path] = st
		res.diags = append(res.diags, ds...)
		all = append(all, fileEntries{c.path, st.entries})
	}
	l.state = next

	// Created: the payload's, else when this process first read the
	// entrypoint in this file, so that an entrypoint already routed wins
	// a collision against one added later.
	seen := make(map[seenKey]time.Time)
	now := l.now()
	type placed struct {
		k    kept
		file string
	}
	byName := map[string][]placed{}
	var names []string
	for _, f := range all {
		for _, k := range f.entries {
			key := seenKey{f.path, k.ep.Name}
			t, ok := l.seen[key]
			if !ok {
				t = now
			}
			seen[key] = t
			if k.ep.Created.IsZero() {
				k.ep.Created = t
			}
			if _, ok := byName[k.ep.Name]; !ok {
				names = append(names, k.ep.Name)
			}
			byName[k.ep.Name] = append(byName[k.ep.Name], placed{k, f.path})
		}
	}
	// A policy is dated as an entrypoint is: the payload's created, else
	// when this process first read it in this file (W039's order).
	for _, c := range cands {
		for _, p := range next[c.path].policies {
			key := seenKey{c.path, "policy " + p.Name}
			t, ok := l.seen[key]
			if !ok {
				t = now
			}
			seen[key] = t
			if p.Created.IsZero() {
				p.Created = t
			}
			res.policies = append(res.policies, p)
		}
	}
	l.seen = seen
	res.fileOf = map[string]string{}
	for _, name := range names {
		list := byName[name]
		// Oldest first, then file path, then position: stable, so
		// the winner never depends on the order of events.
		slices.SortStableFunc(list, func(a, b placed) int { return a.k.ep.Created.Compare(b.k.ep.Created) })
		win := list[0]
		res.entrypoints = append(res.entrypoints, win.k.ep)
		res.diags = append(res.diags, win.k.diags...)
		res.fileOf[win.k.ep.ID] = win.file
		for _, lose := range list[1:] {
			res.diags = append(res.diags, diagnostics.New(diagnostics.ConfigEntrypointRefused,
				entrySource(lose.file, name), "name", name, "",
				fmt.Sprintf("entrypoints[%d]: the name %s is already used in %s (older); this one is not routed", lose.k.index, name, win.file),
				"rename one of the two entrypoints"))
		}
	}
	return res
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// listDir names the config files of dir: regular files (or symlinks to
// them) ending in .yaml, .yml or .json, not hidden. Hidden names are left
// out so that editors' swap files and a Kubernetes ConfigMap volume's
// ..data and ..<timestamp> entries are not read twice: the ConfigMap's
// keys are symlinks through ..data, read like any file.
func listDir(dir string) ([]string, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, de := range des {
		name := de.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		if _, ok := formatOf(name); !ok {
			continue
		}
		path := filepath.Join(dir, name)
		fi, err := os.Stat(path) // follows symlinks
		if err != nil {
			// A dangling symlink, or a file removed since the listing:
			// gone, as its routes are.
			continue
		}
		if fi.Mode().IsRegular() {
			out = append(out, path)
		}
	}
	return out, nil
}

// readFile reads and parses one file. A file that cannot be read or
// parsed keeps prev's entrypoints.
func (l *loader) readFile(c candidate, prev *fileState) (*fileState, []diagnostics.Diagnostic) {
	if prev == nil {
		prev = &fileState{}
	}
	src := diagnostics.Source{Provider: config.SourceFile, ObjectID: c.path, ObjectName: c.path}
	data, err := readLimited(c.path, l.maxBytes)
	if err != nil {
		// The last parse is kept whole, so that the same bytes read
		// again later are not parsed again.
		st := &fileState{data: prev.data, parsed: prev.parsed, entries: prev.entries, diags: prev.diags, policies: prev.policies}
		return st, []diagnostics.Diagnostic{diagnostics.New(diagnostics.ConfigFileUnread, src, "", "",
			keptFallback(prev.entries), "config file not read: "+err.Error(), "")}
	}
	if prev.parsed && bytes.Equal(data, prev.data) {
		return prev, prev.diags
	}
	format, known := formatOf(c.path)
	if !known {
		format = sniffFormat(data)
	}
	raws, fileDiags, err := parseDocument(format, data, src)
	var se *syntaxError
	if errors.As(err, &se) {
		st := &fileState{data: data, parsed: true, entries: prev.entries, policies: prev.policies}
		st.diags = append(fileDiags, diagnostics.New(diagnostics.ConfigFileMalformed, src, se.where(), "",
			keptFallback(prev.entries), se.msg, ""))
		return st, st.diags
	}
	st := &fileState{data: data, parsed: true, diags: fileDiags}
	for _, raw := range raws {
		if raw.policy {
			p, ds := decodePolicy(c.path, raw)
			st.diags = append(st.diags, ds...)
			if p != nil {
				st.policies = append(st.policies, *p)
			}
			continue
		}
		k, ds, ok := decodeRaw(c.path, raw, prev.entries)
		st.diags = append(st.diags, ds...)
		if ok {
			st.entries = append(st.entries, k)
		}
	}
	return st, st.diags
}

// decodeRaw validates one entry. An entry the API would refuse keeps the
// version of the same name among prev, if there is one.
func decodeRaw(path string, raw rawEntry, prev []kept) (kept, []diagnostics.Diagnostic, bool) {
	src := entrySource(path, raw.name)
	ep, ds, err := decodeEntry(raw, src)
	if err == nil {
		return kept{ep: ep, diags: ds, index: raw.index}, nil, true
	}
	var ie *config.InputError
	msg := err.Error()
	if errors.As(err, &ie) {
		msg = ie.Message
		ds = ie.Diagnostics
	}
	where := fmt.Sprintf("entrypoints[%d]", raw.index)
	if raw.line > 0 {
		where += fmt.Sprintf(" (line %d)", raw.line)
	}
	i := slices.IndexFunc(prev, func(k kept) bool { return raw.name != "" && k.ep.Name == raw.name })
	if i < 0 {
		return kept{}, append(ds, diagnostics.New(diagnostics.ConfigEntrypointRefused, src, "", "", "",
			where+": "+msg+"; this entrypoint is not routed", "")), false
	}
	old := prev[i]
	old.index = raw.index
	// The diagnostics of the version that runs are those of its own
	// decode: the refused version's follow with the refusal.
	return old, append(ds, diagnostics.New(diagnostics.ConfigEntrypointRefused, src, "", "", "its last good version",
		where+": "+msg+"; its last good version keeps being routed", "")), true
}

// decodePolicy validates one named policy of a file with the API's
// decoder (config.DecodePolicy). A policy that cannot be one (no valid
// name, not an object) is W049 and left out: a route that references it
// denies (E007) until it is fixed.
func decodePolicy(path string, raw rawEntry) (*config.Policy, []diagnostics.Diagnostic) {
	src := entrySource(path, "policy "+raw.name)
	src.ObjectID = path
	body, err := payloadOf(raw)
	if err == nil {
		var p config.Policy
		var ds []diagnostics.Diagnostic
		if p, ds, err = config.DecodePolicy(config.FormatJSON, body, src); err == nil {
			p.Source = config.SourceFile
			return &p, ds
		}
	}
	var ie *config.InputError
	msg := err.Error()
	if errors.As(err, &ie) {
		msg = ie.Message
	}
	where := fmt.Sprintf("policies[%d]", raw.index)
	if raw.line > 0 {
		where += fmt.Sprintf(" (line %d)", raw.line)
	}
	return nil, []diagnostics.Diagnostic{diagnostics.New(diagnostics.BadPolicyName, src, where, raw.name, "not declared",
		where+": "+msg+"; routes that use it deny", "")}
}

// entrySource names an entrypoint of a file in diagnostics: the file is
// the object, as a container is for labels, and the entrypoint its
// service.
func entrySource(path, name string) diagnostics.Source {
	src := diagnostics.Source{Provider: config.SourceFile, ObjectName: path, Service: name}
	if name != "" {
		src.ObjectID = IDOf(name)
	}
	return src
}

func keptFallback(prev []kept) string {
	switch len(prev) {
	case 0:
		return "" // nothing to keep: the file never gave an entrypoint
	case 1:
		return "its last good entrypoint"
	}
	return fmt.Sprintf("its %d last good entrypoints", len(prev))
}

// readLimited reads a regular file of at most max bytes.
func readLimited(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s is over the limit of %d bytes", path, max)
	}
	return data, nil
}
