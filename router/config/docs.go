package config

import (
	"bytes"
	"fmt"
	"strings"
)

// FieldsMarkdown renders the field table as docs/labels.md. The file is
// generated from this function and a test keeps it in sync, so the docs
// cannot drift from what the parser accepts.
func FieldsMarkdown() []byte {
	var b bytes.Buffer
	b.WriteString("<!-- Code generated from the field table (config.FieldsMarkdown); DO NOT EDIT. -->\n")
	b.WriteString("<!-- Regenerate: go test ./router/config -run TestFieldsMarkdownInSync -update -->\n\n")
	b.WriteString(`# Labels and API fields

Levee is configured per service with container labels or, for hosts that are not containers, with the REST API.
Both go through one field table and one validator, so the same mistake gives the same diagnostic code either way
(see [diagnostics.md](diagnostics.md)).

## Grammar

` + "```" + `
<prefix>.enable=true                          opt the container in (unless --docker-exposed-by-default)
<prefix>.network=<network>                    the network whose IP Levee dials
<prefix>.<protocol>.<service>.<field>=<value>
<prefix>.policy.<name>.<group>.<field>=<value>  a named policy, on any container (used with <service>.policies=<name>)
` + "```" + `

- ` + "`<prefix>`" + ` is ` + "`levee`" + ` by default (` + "`--label-prefix`" + `), so a compose file written for Sōzune works with ` + "`--label-prefix sozune`" + `.
- ` + "`<protocol>`" + ` is ` + "`http`" + `, ` + "`tcp`" + ` or ` + "`udp`" + ` (others are W012 and ignored). A ` + "`tcp`" + ` service reads the ` + "`tcp.*`" + ` fields written without ` + "`tcp.`" + ` (` + "`levee.tcp.pg.listener=postgres`" + `), ` + "`port`" + `, ` + "`weight`" + `, ` + "`healthCheck.interval|timeout|rise|fall`" + ` (a TCP connect check) and the connect-level ` + "`circuitBreaker.*`" + ` fields; any other field there is W093 ([tcp.md](tcp.md)); a ` + "`udp`" + ` service reads the ` + "`udp.*`" + ` fields likewise (` + "`levee.udp.dns.listener=dns`" + `, ` + "`levee.udp.dns.circuitBreaker.answerTimeout=2s`" + `), ` + "`port`" + `, ` + "`weight`" + ` and the same ` + "`circuitBreaker.*`" + ` fields ([tcp.md](tcp.md#udp-routes)). ` + "`<service>`" + ` has no dot; ` + "`<field>`" + ` may (` + "`circuitBreaker.threshold`" + `).
- Keys are read in any case, as Traefik reads its labels: ` + "`levee.http.app.basicauth.users`" + ` is ` + "`basicAuth.users`" + `, and
  ` + "`Levee.HTTP.app.Host`" + ` is ` + "`levee.http.app.host`" + `. Two things keep their case: the ` + "`<service>`" + ` name (it is the route's name, and
  ` + "`App`" + ` and ` + "`app`" + ` are two services, as Traefik's router names are) and the name after a map field
  (` + "`headers.customRequestHeaders.X-Name`" + `, a header name, which HTTP compares in any case anyway). Diagnostics quote the key
  as written. One field written in two spellings is given twice (W035).
- An unknown key is W013 with a did-you-mean, and a Traefik or Sōzune key is W013 with what Levee calls it or that Levee does not
  support it ([migrating.md](migrating.md#keys-levee-names-differently-or-does-not-have)).
- **Access policies fail closed.** An unknown key under an access policy (` + "`basicAuth`" + `, ` + "`forwardAuth`" + `, ` + "`ipAllowList`" + `,
  ` + "`rateLimit`" + `, ` + "`inFlight`" + `: ` + "`basicAuth.userz`" + `) is E005, and a policy name misspelled (` + "`basicAuh.users`" + `) or another
  proxy's name of one (` + "`ipWhiteList.sourceRange`" + `) is E006: the route is routed but denies every request (403,
  ` + "`X-Levee-Diagnostic: policy-misconfigured`" + `) until the key is fixed, never served without the policy. The same holds in
  API payloads (` + "`config.basic_auth.userz`" + `).
- A named policy holds policy groups only (W048 for another field); a service uses it with ` + "`policies=<name>,...`" + `, its own
  groups first, then the first policy that has the group. An unknown name denies every request (E007)
  ([policies.md](policies.md#named-policies)).
- ` + "`<prefix>.enable`" + ` accepts the booleans below (W028 when invalid: the --docker-exposed-by-default setting applies).
  A container that is not enabled produces no diagnostic, except I003 (info, once) when it carries ` + "`traefik.*`" + ` labels and no ` + "`<prefix>.*`" + ` label
  (see [migrating.md](migrating.md)).
- ` + "`<prefix>.network`" + `: when the container is not attached to it, W009 and Levee chooses: a network shared with Levee's own
  container, else the first by name. A container without an address on the chosen network is not a backend (W010).
- Replicas (containers with the same service name and the same hosts) form one entrypoint with one backend each; when their labels
  differ the oldest container's labels apply (W031 names the keys). Containers with a HEALTHCHECK are backends only while healthy.
- Swarm services are labelled the same way, under ` + "`deploy.labels`" + ` of a stack file (` + "`levee serve --swarm`" + `); their backends are
  their running tasks, or their virtual IP with the Swarm-only field ` + "`lb.swarm=true`" + ` (W072 on a container). See [swarm.md](swarm.md).
- Setting any ` + "`healthCheck.*`" + ` field turns health checks on, and any ` + "`circuitBreaker.*`" + ` field turns the breaker on; the fields not
  given take their defaults.

## Values

- **duration**: whole seconds (` + "`10`" + `, as Sōzune) or a Go duration (` + "`1500ms`" + `, ` + "`2m`" + `). In JSON/YAML a number is seconds, a string either form.
- **boolean**: ` + "`true/false`" + `, ` + "`1/0`" + `, ` + "`yes/no`" + `, ` + "`on/off`" + `, any case (JSON booleans too).
- **list**: comma-separated, items trimmed, empty items dropped (JSON: a list of strings, or the same comma-separated string).
- **status list**: codes, ranges and classes: ` + "`500,502-504`" + `, ` + "`5xx`" + ` (JSON: also a number or a list).
- **map**: named values, one label per name: ` + "`headers.customRequestHeaders.X-Script-Name=app`" + ` (JSON: an object, ` + "`{\"X-Script-Name\":\"app\"}`" + `);
  a single label without a name takes ` + "`Name: value`" + ` lines.
- **size**: bytes (` + "`1048576`" + `) or a whole number with a unit, any case: ` + "`KiB`" + `, ` + "`MiB`" + `, ` + "`GiB`" + ` (1024-based; ` + "`K`" + `, ` + "`M`" + `, ` + "`G`" + ` too) or ` + "`KB`" + `, ` + "`MB`" + `, ` + "`GB`" + ` (1000-based): ` + "`10MiB`" + ` (JSON: also a number of bytes).
- **integer**, **number**: as written; ` + "`1.5`" + ` is not an integer.

A bad value falls back to the field's default with the field's code; every other field still applies.

## API payload

` + "```json" + `
{"name":"app","protocol":"Http",
 "backends":[{"address":"10.0.0.5","port":8080,"weight":100}],
 "config":{"hostnames":["app.example.com"],
           "circuit_breaker":{"threshold":0.5,"min_requests":20,"cooldown_secs":10}}}
` + "```" + `

` + "`name`" + ` (the id, ` + "`[a-z0-9][a-z0-9_-]*`" + `) and ` + "`config.hostnames`" + ` are required (else 422); ` + "`protocol`" + ` defaults to ` + "`Http`" + `.
Without ` + "`backends`" + ` the entrypoint answers 503 until backends are given (W034). A backend without ` + "`port`" + ` uses 80 (I002);
one without ` + "`address`" + ` is dropped (W010). Unknown fields are W013, never silently dropped; under an access policy
(` + "`basic_auth`" + `, ` + "`forward_auth`" + `, ` + "`ip_allow_list`" + `, ` + "`rate_limit`" + `, ` + "`in_flight`" + `) they are E005 and the route denies.
Keys are read in any case (` + "`Basic_Auth`" + ` is ` + "`basic_auth`" + `). A stored entrypoint keeps such keys in
` + "`config.unread_access_keys`" + `, so that it still denies after a restart.

## Fields

| label | JSON / YAML | type | default | example | code | description |
|---|---|---|---|---|---|---|
`)
	for _, f := range fieldTable {
		label := "`" + f.Label + "`"
		if f.Kind == KindMap {
			label += ", `" + f.Label + ".<Name>`"
		}
		for _, a := range f.LabelAliases {
			label += ", `" + a + "`"
		}
		js := "`" + f.JSON + "`"
		for _, a := range f.JSONAliases {
			js += ", `" + a + "`"
		}
		kind := string(f.Kind)
		if len(f.Values) > 0 {
			kind += ": " + strings.Join(f.Values, ", ")
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | `%s` | [%s](diagnostics.md#%s) | %s |\n",
			label, js, kind, f.Default, f.Example, f.Code, strings.ToLower(string(f.Code)), strings.ReplaceAll(f.Doc, "|", "\\|"))
	}
	return b.Bytes()
}

// The markers around the part of docs/migrating.md that ForeignKeysMarkdown
// generates; the text between them is replaced whole.
const (
	ForeignKeysBegin = "<!-- BEGIN foreign keys: generated from the foreign-key table (config.ForeignKeysMarkdown); regenerate: go test ./router/config -run TestMigratingInSync -update -->\n"
	ForeignKeysEnd   = "<!-- END foreign keys -->\n"
)

// ForeignKeysMarkdown renders the foreign-key table for docs/migrating.md,
// markers included, so that the document says exactly what the W013 hints
// say.
func ForeignKeysMarkdown() []byte {
	var b bytes.Buffer
	b.WriteString(ForeignKeysBegin)
	b.WriteString("\n| key under `<prefix>.http.<service>.` | from | in Levee |\n|---|---|---|\n")
	for _, fk := range foreignTable {
		levee := "not supported"
		if len(fk.Fields) > 0 {
			names := make([]string, len(fk.Fields))
			for i, f := range fk.Fields {
				names[i] = "`" + f + "`"
			}
			levee = joinAnd(names)
		}
		if fk.Note != "" {
			levee += "; " + fk.Note
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", fk.Key, fk.Proxy, strings.ReplaceAll(levee, "|", "\\|"))
	}
	b.WriteString("\n" + ForeignKeysEnd)
	return b.Bytes()
}
