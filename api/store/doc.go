// Package store is the API's durable store, and only that: it holds the
// entrypoints posted to the API and is the only writer of the state file
// (--state-file) and the log beside it.
//
// Every accepted change is appended to the log as one checksummed record
// and fsynced before the method returns, and only then handed to the Sink
// (the router), so an acknowledged write survives a crash and a failed
// write changes nothing. Once the log outgrows the snapshot, the whole set
// is compacted into a new snapshot (temp file, fsync, rename, fsync of the
// directory) and the log emptied. At start the snapshot is read and the
// log replayed over it: a torn last record (a crash during an append, never
// acknowledged) is dropped with a warning; a bad record followed by good
// ones is damage and stops the start. log.go gives the format and the
// crash rules; batch.go the all-or-nothing batches.
//
// Payloads are re-decoded at start through the Codec, so diagnostics come
// from the current validator. The package knows nothing of HTTP: package
// api decodes requests and answers them.
package store
