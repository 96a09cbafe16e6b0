package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --log-format console writes colour codes only to a terminal: a buffer, a
// file or a pipe gets plain text.
func TestConsoleLogHasNoColourOffATerminal(t *testing.T) {
	file, err := os.Create(filepath.Join(t.TempDir(), "levee.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var buf bytes.Buffer
	readFile := func() string {
		data, err := os.ReadFile(file.Name())
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	for _, c := range []struct {
		name string
		out  io.Writer
		read func() string
	}{{"buffer", &buf, buf.String}, {"file", file, readFile}} {
		log, err := newLogger(serveConfig{LogLevel: "info", LogFormat: "console"}, c.out)
		if err != nil {
			t.Fatal(err)
		}
		log.Warn().Str("route", "echo").Msg("breaker opened")
		text := c.read()
		if !strings.Contains(text, "breaker opened") || !strings.Contains(text, "route=echo") {
			t.Errorf("%s: %q is not the console format", c.name, text)
		}
		if strings.ContainsRune(text, '\x1b') {
			t.Errorf("%s: console log has escape codes off a terminal: %q", c.name, text)
		}
	}
}

// --log-format auto is JSON off a terminal.
func TestAutoLogFormatIsJSONOffATerminal(t *testing.T) {
	var buf bytes.Buffer
	log, err := newLogger(serveConfig{LogLevel: "info", LogFormat: "auto"}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	log.Info().Msg("levee starting")
	if !strings.HasPrefix(buf.String(), `{"level":"info"`) {
		t.Errorf("auto off a terminal wrote %q, want JSON", buf.String())
	}
}
