package errorpages

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/levee-proxy/levee/router/config"
)

// ErrPageTooLarge is the error of a page file over
// config.MaxErrorFileBytes.
var ErrPageTooLarge = errors.New("error-page file too large")

// Page is an error page read from a file.
type Page struct {
	// ContentType is from the file's extension, else sniffed from its
	// first bytes (the WHATWG MIME Sniffing algorithm of
	// http.DetectContentType).
	ContentType string
	Body        []byte
}

// ErrNoPagesDir is the error of a page file when no pages directory was
// given (--error-pages-dir): page files are off.
var ErrNoPagesDir = errors.New("error-page files are off: start Levee with --error-pages-dir naming the directory that holds them")

// ReadPage reads the page file at path, which must be inside dir (the
// operator's --error-pages-dir) once symbolic links are resolved: a page
// is sent to any client, and whoever sets a route's labels must not be
// able to publish any file Levee can read (its keys, its state). Only a
// regular file of at most config.MaxErrorFileBytes is read: it is
// opened without blocking (a FIFO would wait for a writer, under the
// router's lock) and checked before any byte is read.
func ReadPage(path, dir string) (Page, error) {
	if err := config.CheckErrorFile(path); err != nil {
		return Page{}, err
	}
	real, err := inDir(path, dir)
	if err != nil {
		return Page{}, err
	}
	f, err := os.OpenFile(real, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return Page{}, fmt.Errorf("error-page file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Page{}, fmt.Errorf("error-page file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return Page{}, fmt.Errorf("error-page file %s is not a regular file (%s)", path, st.Mode().Type())
	}
	if st.Size() > config.MaxErrorFileBytes {
		return Page{}, fmt.Errorf("error-page file %s has %d bytes, more than the %d allowed: %w", path, st.Size(), config.MaxErrorFileBytes, ErrPageTooLarge)
	}
	b, err := io.ReadAll(io.LimitReader(f, config.MaxErrorFileBytes+1))
	if err != nil {
		return Page{}, fmt.Errorf("error-page file %s: %w", path, err)
	}
	if len(b) > config.MaxErrorFileBytes {
		return Page{}, fmt.Errorf("error-page file %s grew past the %d bytes allowed while it was read: %w", path, config.MaxErrorFileBytes, ErrPageTooLarge)
	}
	ct := mime.TypeByExtension(filepath.Ext(path))
	if ct == "" {
		ct = http.DetectContentType(b)
	}
	return Page{ContentType: ct, Body: b}, nil
}

// inDir resolves path's symbolic links and returns it when it lies
// inside dir (resolved too).
func inDir(path, dir string) (string, error) {
	if dir == "" {
		return "", ErrNoPagesDir
	}
	base, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("error-pages directory %s: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("error-page file: %w", err)
	}
	rel, err := filepath.Rel(base, real)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("error-page file %s is outside the error-pages directory %s (--error-pages-dir)", path, dir)
	}
	return real, nil
}
