package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/caddyserver/certmagic"

	"github.com/levee-proxy/levee/router/certs/traefikacme"
)

// runImportACME copies the certificates of Traefik's acme.json into
// --cert-dir for the CA of --acme-ca (package traefikacme), so that a
// Levee migrated from Traefik serves and renews them instead of ordering
// them again. It exits 1 when a certificate could not be read (the
// others are imported all the same), 2 on a usage error.
func runImportACME(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("levee import-acme", flag.ContinueOnError)
	certDir := fs.String("cert-dir", "./levee-certs", "Levee's ACME storage, as levee serve --cert-dir (also LEVEE_CERT_DIR)")
	ca := fs.String("acme-ca", "", "the ACME directory URL levee serve will use, as --acme-ca (also LEVEE_ACME_CA; default Let's Encrypt)")
	usage := func(w io.Writer) {
		fmt.Fprintln(w, "usage: levee import-acme [--cert-dir DIR] [--acme-ca URL] ACME.JSON")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr, usage); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "levee import-acme:", err)
		return 2
	}
	if err := applyEnv(fs, getenv); err != nil {
		fmt.Fprintln(stderr, "levee import-acme:", err)
		return 2
	}
	if fs.NArg() != 1 {
		usage(stderr)
		return 2
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "levee import-acme:", err)
		return 1
	}
	defer f.Close()
	list, problems, err := traefikacme.Read(f)
	if err != nil {
		fmt.Fprintf(stderr, "levee import-acme: %s: %v\n", fs.Arg(0), err)
		return 1
	}
	for _, p := range problems {
		fmt.Fprintf(stderr, "levee import-acme: %s: %v (not imported)\n", fs.Arg(0), p)
	}
	results, err := traefikacme.Import(ctx, &certmagic.FileStorage{Path: *certDir}, *ca, list)
	for _, r := range results {
		if r.Imported {
			fmt.Fprintf(stdout, "imported %s\n", r.Name)
		} else {
			fmt.Fprintf(stdout, "kept %s: --cert-dir %s already has a certificate for it\n", r.Name, *certDir)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "levee import-acme:", err)
		return 1
	}
	if len(problems) > 0 {
		return 1
	}
	return 0
}
