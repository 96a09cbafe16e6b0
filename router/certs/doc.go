// Package certs chooses the certificate a TLS listener presents for a
// client's server name (SNI) and holds Levee's TLS policy.
//
// The model: a Store answers tls.Config.GetCertificate from three sources,
// in order, and never consults a later one when an earlier one covers the
// name:
//
//  1. static certificates: PEM files in one directory (--tls-cert-dir),
//     each chain `name.crt` (or `name.pem`) with its key in `name.key` (or
//     in the same .pem). A pair serves every DNS name of its certificate,
//     wildcards included (`*.example.com` covers `a.example.com`, not
//     `example.com` nor `a.b.example.com`, as RFC 6125 6.4.3 has it); an
//     exact name beats a wildcard, and between two pairs for one name the
//     one that expires last wins. The directory is polled (file names, sizes
//     and modification times; no new dependency) and reloaded as a whole
//     when it changed: a pair that cannot be used (unreadable, key without
//     certificate or the reverse, key that does not match, expired or not
//     yet valid, no valid DNS name) is reported as W043 and left out,
//     without affecting the others.
//  2. an Issuer (ACME, package certs's caller wires certmagic) for the names
//     it manages: exactly the hosts of TLS routes without a static
//     certificate, never a name a client merely asks for. A wildcard host
//     is managed only with DNS-01 (the one challenge that proves a whole
//     domain, RFC 8555 7.1.3, 8.4; providers in package dnsprovider), and
//     its certificate then answers every name one label below it.
//  3. the default certificate: --tls-default-cert/--tls-default-key, else a
//     self-signed ECDSA P-256 certificate generated in memory at start
//     (never written to disk, so it can never replace an operator's file).
//     A client that sends no SNI or a name Levee has no certificate for
//     gets it; browsers will warn, which is the honest answer.
//
// The TLS policy (Config): TLS 1.2 and 1.3 only; for TLS 1.2 only ECDHE
// key exchange with AEAD ciphers (AES-GCM, ChaCha20-Poly1305), the modern
// subset of Go's defaults (TLS 1.3's suites are not configurable and all
// modern); Go's default curves (X25519MLKEM768, X25519, P-256, P-384);
// ALPN h2 and http/1.1, plus acme-tls/1 when an issuer answers TLS-ALPN-01.
// Certificates Levee generates are ECDSA P-256: the fastest handshake Go
// offers.
package certs
