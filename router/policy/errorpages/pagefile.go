package errorpages

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// pageRecheck is how often a page file is looked at again: an edited
// page is served within this long of the edit, and a storm of error
// answers costs at most one stat(2) per interval.
const pageRecheck = time.Second

// pageFile is an errors.file page, read when the route is built and
// again when the file changes (its size or modification time), looked
// at no more than once per pageRecheck. An edit that cannot be read (a
// half-written file over 1 MiB, a file moved out of the pages
// directory) keeps the last good page: error pages are not access
// control, and a page that was fine stays fine until a good one
// replaces it.
type pageFile struct {
	path, dir string
	now       func() time.Time

	mu      sync.Mutex
	page    Page
	size    int64
	mod     time.Time
	checked time.Time
}

// openPageFile reads the page at path inside dir.
func openPageFile(path, dir string, now func() time.Time) (*pageFile, error) {
	page, err := ReadPage(path, dir)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("error-page file: %w", err)
	}
	return &pageFile{path: path, dir: dir, now: now, page: page, size: st.Size(), mod: st.ModTime(), checked: now()}, nil
}

// current is the page to send now.
func (f *pageFile) current() Page {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	if now.Sub(f.checked) < pageRecheck {
		return f.page
	}
	f.checked = now
	st, err := os.Stat(f.path)
	if err != nil || (st.Size() == f.size && st.ModTime().Equal(f.mod)) {
		return f.page
	}
	if page, err := ReadPage(f.path, f.dir); err == nil {
		f.page, f.size, f.mod = page, st.Size(), st.ModTime()
	}
	return f.page
}
