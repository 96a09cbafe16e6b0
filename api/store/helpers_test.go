package store

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// fakePayload is the part of the API's payload these tests write: a name
// and hostnames.
type fakePayload struct {
	Name   string `json:"name"`
	Config struct {
		Hostnames []string `json:"hostnames"`
	} `json:"config"`
}

// fakeCodec stands in for the config package's validator: the store only
// needs payloads that decode back to what was encoded.
func fakeCodec() Codec {
	return Codec{Decode: fakeDecode, Encode: fakeEncode}
}

func fakeDecode(_ config.Format, body []byte, _ diagnostics.Source) (config.Entrypoint, []diagnostics.Diagnostic, error) {
	var p fakePayload
	if err := json.Unmarshal(body, &p); err != nil {
		return config.Entrypoint{}, nil, &config.InputError{Status: 400, Message: "malformed payload: " + err.Error()}
	}
	if p.Name == "" {
		return config.Entrypoint{}, nil, &config.InputError{Status: 422, Message: fmt.Sprintf("bad name %q", p.Name)}
	}
	return config.Entrypoint{ID: p.Name, Name: p.Name, Source: config.SourceAPI, Protocol: config.ProtocolHTTP,
		Hosts: p.Config.Hostnames, Path: "/"}, nil, nil
}

func fakeEncode(ep config.Entrypoint) ([]byte, error) {
	var p fakePayload
	p.Name, p.Config.Hostnames = ep.Name, ep.Hosts
	return json.Marshal(p)
}

// nullSink is a Sink that drops what it hears.
type nullSink struct{}

func (nullSink) Update(config.SourceUpdate) {}
func (nullSink) Patch(config.SourcePatch)   {}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return b
}
