package main

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// minTokenLength is the shortest API token Levee accepts. The API changes
// routing, and a short token is guessed; 16 characters is the least that a
// generated token (head -c 24 /dev/urandom | base64: 32) comfortably passes.
const minTokenLength = 16

// tokenHint says how to make a token that passes.
const tokenHint = "generate one with: head -c 24 /dev/urandom | base64"

// checkAPITokens refuses API tokens, and a sticky secret, that are easy
// to guess: shorter than minTokenLength, a well-known placeholder such as
// the demo's old "change-me", or one character repeated. No token at all is not checked
// here: the API then runs open, which api.CheckListen allows on loopback
// only. The errors name the flag and its variable, never the token.
func checkAPITokens(cfg serveConfig) error {
	var errs []error
	for _, t := range []struct{ flag, value string }{
		{"api-token", cfg.APIToken},
		{"api-read-token", cfg.APIReadToken},
		// A guessed sticky secret lets a client invert its cookie to the
		// backend's address, as an unkeyed hash would.
		{"sticky-secret", cfg.StickySecret},
	} {
		if err := checkToken(t.value); err != nil {
			errs = append(errs, fmt.Errorf("refusing to start: --%s (%s) %w; %s", t.flag, envName(t.flag), err, tokenHint))
		}
	}
	return errors.Join(errs...)
}

// checkToken says why token is too weak to guard the API, or nil.
func checkToken(token string) error {
	if token == "" {
		return nil
	}
	norm := normaliseToken(token)
	if isPlaceholder(norm) {
		return fmt.Errorf("is the placeholder %q", strings.ToLower(token))
	}
	if n := utf8.RuneCountInString(token); n < minTokenLength {
		return fmt.Errorf("is %d characters long, want at least %d", n, minTokenLength)
	}
	for _, word := range []string{"changeme", "replaceme", "yourtoken", "yoursecret", "placeholder"} {
		if strings.Contains(norm, word) {
			return fmt.Errorf("contains the placeholder %q", word)
		}
	}
	if first, _ := utf8.DecodeRuneInString(token); strings.Count(token, string(first)) == utf8.RuneCountInString(token) {
		return errors.New("is one character repeated")
	}
	return nil
}

// normaliseToken lower-cases token and keeps only its letters and digits,
// so that "Change-Me", "change_me" and "CHANGEME" are one placeholder.
func normaliseToken(token string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return unicode.ToLower(r)
		}
		return -1
	}, token)
}

// isPlaceholder reports whether a normalised token is one that examples,
// demos and tutorials use, and so one that attackers try first.
func isPlaceholder(norm string) bool {
	switch norm {
	case "changeme", "replaceme", "secret", "password", "passw0rd", "token", "apitoken", "admin",
		"admintoken", "test", "testing", "example", "default", "demo", "levee", "mysecret",
		"mytoken", "yourtoken", "letmein", "qwerty", "123456", "1234567890", "xxx", "xxxx":
		return true
	}
	return false
}
