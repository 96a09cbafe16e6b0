// Package compress is the policy that compresses a route's responses with
// zstd, brotli or gzip.
//
// # The model
//
// The encoding is chosen from the request's Accept-Encoding (RFC 9110
// 12.5.3): the route's encoding with the highest q-value wins, ties go to
// the route's order of preference (by default zstd, br, gzip: zstd is the
// fastest for its ratio, brotli the densest on text, gzip what every client
// has); q=0 refuses an encoding, "*" stands for those not named, and
// "identity" is always acceptable, so a client that accepts none of ours
// gets the body as it is.
//
// A response is left alone when compressing it would be wrong or a waste:
// the request was HEAD or an upgrade; the status is 1xx, 204 or 304, or
// 206 (a range of the identity body: compressing it would make the ranges
// lie) or has Content-Range; the backend already encoded it
// (Content-Encoding other than identity); Cache-Control says no-transform
// (RFC 9111 5.2.2.6); its media type is excluded by the route or is a
// format that is compressed already (images but SVG, audio, video, fonts
// in WOFF, archives); or the body is smaller than minResponseBodyBytes:
// known from Content-Length, or, without one, by holding back up to that
// many bytes first and sending them as they are if the body ends there.
//
// A compressed response streams: each Write goes through the encoder and
// nothing is buffered beyond the encoder's window; Flush flushes the
// encoder and then the connection, so server-sent events keep arriving
// event by event. It loses Content-Length and Accept-Ranges, gets
// Content-Encoding, and a strong ETag becomes weak (the bytes differ from
// the identity representation's; RFC 9110 8.8.3). Every response that
// could have been compressed carries Vary: Accept-Encoding, so that a
// cache never gives a compressed body to a client that did not ask for it.
//
// # Memory
//
// Encoders are large (about 1 MiB for gzip, 2 MiB for zstd and brotli once
// used), and a client that stops reading holds its response's encoder for
// as long as the response lasts. So they come from Encoders, one set of
// pools per process shared by every route's policy under one memory
// budget (levee serve --compress-memory, injected through router.Options;
// no package state): an encoder is charged from its making to its
// dropping, at most MaxIdle per encoding are kept idle, idle ones of
// another encoding are dropped to make room, and a response that finds
// the budget spent is sent uncompressed rather than waiting or growing
// memory. Windows are kept small (zstd 256 KiB, brotli 2^18) for the same
// reason; levels favour speed (gzip 5, zstd's default, brotli 4), as an
// edge proxy compresses on the request path.
package compress
