package dnsprovider

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/libdns/cloudflare"
	"github.com/libdns/rfc2136"
	"github.com/libdns/route53"
)

// testEnv is an environment of vars and files, with route53's
// credentials check recorded instead of asked of the AWS SDK.
type testEnv struct {
	vars, files map[string]string
	aws         *AWSConfig
	awsErr      error
}

func (e *testEnv) env() Env {
	return Env{
		Getenv: func(k string) string { return e.vars[k] },
		ReadFile: func(name string) ([]byte, error) {
			if b, ok := e.files[name]; ok {
				return []byte(b), nil
			}
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		},
		AWSCheck: func(_ context.Context, c AWSConfig) error { e.aws = &c; return e.awsErr },
	}
}

func build(t *testing.T, name string, e *testEnv) (any, error) {
	t.Helper()
	return New(context.Background(), name, e.env())
}

func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one naming %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not name %q", err, p)
		}
	}
}

func TestUnknownProvider(t *testing.T) {
	_, err := build(t, "gandi", &testEnv{})
	wantErr(t, err, `"gandi"`, "cloudflare, rfc2136, route53")
	if Known("gandi") || !Known("rfc2136") {
		t.Error("Known disagrees with the table")
	}
}

func TestCloudflare(t *testing.T) {
	p, err := build(t, "cloudflare", &testEnv{vars: map[string]string{"CLOUDFLARE_API_TOKEN": "tok"}})
	if err != nil {
		t.Fatal(err)
	}
	if cf := p.(*cloudflare.Provider); cf.APIToken != "tok" || cf.ZoneToken != "" {
		t.Errorf("provider %+v", cf)
	}
	// From files, trailing newline removed, as a Docker secret holds it.
	p, err = build(t, "cloudflare", &testEnv{
		vars:  map[string]string{"CLOUDFLARE_API_TOKEN_FILE": "/run/secrets/cf", "CLOUDFLARE_ZONE_TOKEN_FILE": "/run/secrets/zone"},
		files: map[string]string{"/run/secrets/cf": "from-file\n", "/run/secrets/zone": "zone-read\r\n"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if cf := p.(*cloudflare.Provider); cf.APIToken != "from-file" || cf.ZoneToken != "zone-read" {
		t.Errorf("provider %+v", cf)
	}
}

func TestCloudflareErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		vars, files map[string]string
		want        []string
	}{
		"missing":      {want: []string{"CLOUDFLARE_API_TOKEN (or CLOUDFLARE_API_TOKEN_FILE)", "not set"}},
		"both":         {vars: map[string]string{"CLOUDFLARE_API_TOKEN": "a", "CLOUDFLARE_API_TOKEN_FILE": "/f"}, want: []string{"CLOUDFLARE_API_TOKEN and CLOUDFLARE_API_TOKEN_FILE are both set"}},
		"no file":      {vars: map[string]string{"CLOUDFLARE_API_TOKEN_FILE": "/nope"}, want: []string{"CLOUDFLARE_API_TOKEN_FILE=/nope", "not exist"}},
		"empty file":   {vars: map[string]string{"CLOUDFLARE_API_TOKEN_FILE": "/e"}, files: map[string]string{"/e": "\n"}, want: []string{"CLOUDFLARE_API_TOKEN_FILE=/e: the file is empty"}},
		"zone no file": {vars: map[string]string{"CLOUDFLARE_API_TOKEN": "a", "CLOUDFLARE_ZONE_TOKEN_FILE": "/z"}, want: []string{"CLOUDFLARE_ZONE_TOKEN_FILE=/z"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := build(t, "cloudflare", &testEnv{vars: tc.vars, files: tc.files})
			wantErr(t, err, append([]string{"DNS provider cloudflare"}, tc.want...)...)
		})
	}
}

func TestRFC2136(t *testing.T) {
	p, err := build(t, "rfc2136", &testEnv{vars: map[string]string{
		"LEVEE_RFC2136_SERVER": "ns1.example.com", "LEVEE_RFC2136_KEY_NAME": "levee",
		"LEVEE_RFC2136_KEY": "c2VjcmV0", "LEVEE_RFC2136_KEY_ALG": "HMAC-SHA512.",
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := rfc2136.Provider{Server: "ns1.example.com:53", KeyName: "levee", KeyAlg: "hmac-sha512", Key: "c2VjcmV0"}
	if got := *p.(*rfc2136.Provider); got != want {
		t.Errorf("provider %+v, want %+v", got, want)
	}
}

// tsig-keygen's output in LEVEE_RFC2136_KEY_FILE gives name, algorithm
// and secret; a variable set beside it wins.
func TestRFC2136KeyClauseFile(t *testing.T) {
	clause := "key \"ddns-key\" {\n\talgorithm hmac-sha384;\n\tsecret \"c2VjcmV0LWtleQ==\";\n};\n"
	e := &testEnv{
		vars:  map[string]string{"LEVEE_RFC2136_SERVER": "[::1]:5353", "LEVEE_RFC2136_KEY_FILE": "/etc/levee/ddns.key"},
		files: map[string]string{"/etc/levee/ddns.key": clause},
	}
	p, err := build(t, "rfc2136", e)
	if err != nil {
		t.Fatal(err)
	}
	want := rfc2136.Provider{Server: "[::1]:5353", KeyName: "ddns-key", KeyAlg: "hmac-sha384", Key: "c2VjcmV0LWtleQ=="}
	if got := *p.(*rfc2136.Provider); got != want {
		t.Errorf("provider %+v, want %+v", got, want)
	}
	e.vars["LEVEE_RFC2136_KEY_NAME"] = "other"
	p, err = build(t, "rfc2136", e)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.(*rfc2136.Provider).KeyName; got != "other" {
		t.Errorf("key name %q, want the variable's", got)
	}
}

func TestRFC2136Errors(t *testing.T) {
	full := func(k, v string) map[string]string {
		m := map[string]string{"LEVEE_RFC2136_SERVER": "127.0.0.1", "LEVEE_RFC2136_KEY_NAME": "k", "LEVEE_RFC2136_KEY": "c2VjcmV0"}
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	for name, tc := range map[string]struct {
		vars map[string]string
		want string
	}{
		"no server":   {full("LEVEE_RFC2136_SERVER", ""), "LEVEE_RFC2136_SERVER (or LEVEE_RFC2136_SERVER_FILE): not set"},
		"bad server":  {full("LEVEE_RFC2136_SERVER", "http://ns1/"), `LEVEE_RFC2136_SERVER: "http://ns1/": want host[:port]`},
		"no port":     {full("LEVEE_RFC2136_SERVER", "ns1:"), "want host[:port]"},
		"no key":      {full("LEVEE_RFC2136_KEY", ""), "LEVEE_RFC2136_KEY (or LEVEE_RFC2136_KEY_FILE): not set"},
		"no key name": {full("LEVEE_RFC2136_KEY_NAME", ""), "LEVEE_RFC2136_KEY_NAME (the TSIG key's name"},
		"bad alg":     {full("LEVEE_RFC2136_KEY_ALG", "hmac-md5"), `LEVEE_RFC2136_KEY_ALG "hmac-md5": want one of hmac-sha1`},
		"not base64":  {full("LEVEE_RFC2136_KEY", "not base64!"), "LEVEE_RFC2136_KEY: the TSIG secret is not base64"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := build(t, "rfc2136", &testEnv{vars: tc.vars})
			wantErr(t, err, "DNS provider rfc2136", tc.want)
		})
	}
}

func TestRoute53StaticKeys(t *testing.T) {
	e := &testEnv{
		vars:  map[string]string{"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY_FILE": "/s", "AWS_HOSTED_ZONE_ID": "Z123"},
		files: map[string]string{"/s": "wJalrXUtnFEMI\n"},
	}
	p, err := build(t, "route53", e)
	if err != nil {
		t.Fatal(err)
	}
	r := p.(*route53.Provider)
	if r.AccessKeyId != "AKIDEXAMPLE" || r.SecretAccessKey != "wJalrXUtnFEMI" || r.HostedZoneID != "Z123" || r.Region != "us-east-1" {
		t.Errorf("provider %+v", r)
	}
	if e.aws == nil || e.aws.AccessKeyID != "AKIDEXAMPLE" || e.aws.Region != "us-east-1" {
		t.Errorf("credentials check given %+v", e.aws)
	}
}

func TestRoute53Errors(t *testing.T) {
	_, err := build(t, "route53", &testEnv{vars: map[string]string{"AWS_ACCESS_KEY_ID": "AKID"}})
	wantErr(t, err, "AWS_ACCESS_KEY_ID is set without AWS_SECRET_ACCESS_KEY")
	_, err = build(t, "route53", &testEnv{vars: map[string]string{"AWS_SECRET_ACCESS_KEY": "s"}})
	wantErr(t, err, "AWS_SECRET_ACCESS_KEY is set without AWS_ACCESS_KEY_ID")
	// Nothing in the environment and the SDK's chain finds nothing.
	e := &testEnv{vars: map[string]string{"AWS_PROFILE": "dns", "AWS_REGION": "eu-west-1"}, awsErr: errors.New("no EC2 IMDS role found")}
	_, err = build(t, "route53", e)
	wantErr(t, err, "no usable AWS credentials", "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE", "no EC2 IMDS role found")
	if e.aws == nil || e.aws.Profile != "dns" || e.aws.Region != "eu-west-1" {
		t.Errorf("credentials check given %+v", e.aws)
	}
}

// The real check, against the AWS SDK offline: a profile in a shared
// credentials file resolves; a profile that no file has is refused at
// start. The metadata service is disabled so that nothing leaves the
// machine.
func TestRoute53SDKCheck(t *testing.T) {
	dir := t.TempDir()
	creds := filepath.Join(dir, "credentials")
	if err := os.WriteFile(creds, []byte("[dns]\naws_access_key_id = AKIDFILE\naws_secret_access_key = secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", creds)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
		t.Setenv(k, "")
	}
	if err := awsCheck(context.Background(), AWSConfig{Region: "us-east-1", Profile: "dns"}); err != nil {
		t.Fatalf("profile from the shared file: %v", err)
	}
	err := awsCheck(context.Background(), AWSConfig{Region: "us-east-1", Profile: "missing"})
	wantErr(t, err, "missing")
}
