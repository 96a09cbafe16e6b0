// Package file is Levee's file provider: it reads YAML and JSON config
// files (`levee serve --config-dir DIR`, `--config-file FILE`) and hands
// the router the entrypoints they declare, for backends outside Docker (a
// NAS, a VM, a service on the host), as Traefik's file provider does.
//
// The model: a config file holds entrypoints in the payload shape of
// POST /entrypoints, and each is validated by the API's own decoder
// (config.DecodeEntrypoint), so a mistake gets the code, JSON path and
// fallback it gets through the API or a label. A file is one object:
//
//	entrypoints:
//	  - name: nas
//	    config:
//	      hostnames: [nas.example.com]
//	    backends:
//	      - {address: 192.168.1.20, port: 5000}
//
// and, beside entrypoints, a policies list of named policies in the
// payload shape of PUT /policies/<name> (config.DecodePolicy), which routes
// of any source may reference;
// a file may also hold one entrypoint, or a bare list of them, and a YAML
// file several documents (---). An entrypoint named nas gets the id
// nas@file, so it never collides with an API entrypoint or a container,
// and source "file". Its diagnostics name the file as the object and the
// entrypoint as its service. Entrypoints of two files with the same name
// are a collision: the older keeps it (the payload's created, else when
// this process first read it there), then the first by path, and the
// other gets W038.
//
// The provider always replaces its whole set: every read parses every
// file (a file whose bytes did not change since its last parse is not
// parsed again) and sends the complete result, unless it equals the last
// one sent. What fails keeps what was good, file by file: a file that
// cannot be read (W026: permissions, over Options.MaxFileBytes) or parsed
// (W037, with the line, and for JSON the column) keeps the entrypoints of
// its last good parse; within a file that parses, an entrypoint the API
// would refuse (W038: no name, no valid host, backends not a list) keeps
// its last good version of the same name. A file that is removed, or no
// longer matches, takes its entrypoints with it; a named file (Options.
// Files) that is missing keeps them, with W026.
//
// Changes are seen through file notifications (fsnotify: inotify,
// kqueue, ReadDirectoryChangesW) on the directories, never on the files,
// since editors and `kubectl` replace a file by renaming another over it:
// each config directory, the directory of each named file, and the
// directory each symlink points into. A Kubernetes ConfigMap volume swaps
// its ..data symlink in the directory itself, which is an event there;
// hidden names (..data, ..2024_01_01..., editors' swap files) are not
// read as config files. An event arms a short timer (Options.Debounce)
// rather than reading at once, so the events of one write cost one read;
// a read every Options.Rescan is the safety net for what no event
// announces (network file systems). Status and the levee_provider_*
// series (provider="file") say whether every directory is watched and
// listed.
package file
