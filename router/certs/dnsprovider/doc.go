// Package dnsprovider builds the DNS provider through which an ACME DNS-01
// challenge (RFC 8555 8.4) publishes its TXT record: the one challenge that
// proves control of a whole domain, so the only one a CA accepts for a
// wildcard name, and one that works when the CA cannot reach Levee.
//
// The model: a provider is a libdns implementation (certmagic's
// DNSProvider: append and delete records) named by --acme-dns-provider,
// and built once at start from credentials the operator gives through the
// environment. Each secret variable NAME may instead be given as a file,
// NAME_FILE (a Docker or Kubernetes secret): the file's content, trailing
// white space removed. Giving both, an unreadable or empty file, or a
// missing required variable is a start-up error that names the variable,
// never a provider that fails at the first order.
//
// The providers (Names):
//
//   - cloudflare: CLOUDFLARE_API_TOKEN (a scoped API token with Zone.DNS
//     edit rights), and CLOUDFLARE_ZONE_TOKEN when the API token is scoped
//     to one zone (a Zone.Zone read token).
//   - route53: the AWS SDK's credentials: AWS_ACCESS_KEY_ID and
//     AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN for temporary keys),
//     else AWS_PROFILE and the shared files, a web identity, a container
//     or an instance role. They are resolved once at start, so that a
//     machine with none of them fails then. AWS_REGION (default us-east-1:
//     Route 53 is a global service) and AWS_HOSTED_ZONE_ID (else the zone
//     is found by name).
//   - rfc2136: any authoritative server that accepts dynamic updates
//     (RFC 2136) signed with a TSIG key (RFC 8945): LEVEE_RFC2136_SERVER
//     (host[:port], port 53 by default), LEVEE_RFC2136_KEY_NAME,
//     LEVEE_RFC2136_KEY_ALG (default hmac-sha256) and LEVEE_RFC2136_KEY,
//     the base64 secret. LEVEE_RFC2136_KEY_FILE may also hold a key clause
//     as BIND's tsig-keygen writes it, from which the name and algorithm
//     are taken unless their variables are set.
package dnsprovider
