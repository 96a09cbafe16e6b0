package diagnostics

// Codes of the file provider (docs/file-provider.md): problems with a
// config file as a whole. Problems within one of its entrypoints carry the
// codes the API gives the same payload.
const (
	// ConfigFileUnread: a config file could not be read (permissions, not
	// a regular file, over the size limit).
	ConfigFileUnread Code = "W026"
	// ConfigFileMalformed: a config file is not valid YAML or JSON, or
	// not of a config file's shape.
	ConfigFileMalformed Code = "W037"
	// ConfigEntrypointRefused: an entrypoint of a config file is one the
	// API would refuse (400 or 422), or its name is taken by another.
	ConfigEntrypointRefused Code = "W038"
)

// fileEntries are the codes of the file provider; their Code constants
// are declared here too.
func fileEntries() []Entry {
	return []Entry{
		{
			Code: ConfigFileUnread, Severity: Warn, Title: "config file not read",
			Effect:  "The file's last good entrypoints (those of the last time it was read and parsed) keep being routed; a file that never was read gives none. Other files are unaffected. The diagnostic goes away once the file reads.",
			Fix:     "Make the file readable by Levee's user, keep it under 1 MiB (split it), and make the name a regular file (or a symlink to one), not a directory or device.",
			Example: "chmod 000 /etc/levee/routes.d/nas.yaml",
		},
		{
			Code: ConfigFileMalformed, Severity: Warn, Title: "config file malformed",
			Effect:  "The file's last good entrypoints keep being routed; a file that never parsed gives none. Other files are unaffected. The key says the line (YAML) or line and column (JSON) of the error.",
			Fix:     "Correct the syntax at the line given (`levee validate --config-dir DIR` shows it). A config file holds an object with an `entrypoints` list of POST /entrypoints payloads (or one payload, or a list of them). Write files atomically (to a temporary name, then rename) so that Levee never reads half of one.",
			Example: "entrypoints:\n  - name: nas\n    config: {hostnames: [nas.example.com]   # no closing brace",
		},
		{
			Code: ConfigEntrypointRefused, Severity: Warn, Title: "config file entrypoint refused",
			Effect:  "An entrypoint the API would refuse (no or invalid name, no valid host name, `config` not an object, `backends` not a list, a protocol other than Http), or whose name another entrypoint of the file provider already has (the older one keeps it, then the first by file path): it keeps its last good version from this file, if it had one, else it is not routed. The file's other entrypoints apply.",
			Fix:     "Correct the entrypoint as the message says (the diagnostics beside it name the field), or rename one of the two entrypoints that share a name.",
			Example: "entrypoints:\n  - name: nas\n    config: {hostnames: [\"https://nas/\"]}   # no valid host name",
		},
	}
}
