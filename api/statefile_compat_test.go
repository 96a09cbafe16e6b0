package api

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// discardSink takes the store's updates and keeps none.
type discardSink struct{}

func (discardSink) Update(config.SourceUpdate) {}
func (discardSink) Patch(config.SourcePatch)   {}

// A state file written before the field table encoded the payload (its
// payloads are router/config's frozen testdata: one per field, and
// combinations) opens with
// the real codec: every stored entrypoint is what its payload decodes to,
// and the payload the store now holds for it decodes to the same.
func TestStateFileOfTheHandWrittenEncoderLoads(t *testing.T) {
	raw, err := os.ReadFile("../router/config/testdata/payloads-before-field-encoder.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Field   string         `json:"field"`
		Payload map[string]any `json:"payload"`
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	type record struct {
		ID      string          `json:"id"`
		Created time.Time       `json:"created"`
		Payload json.RawMessage `json:"payload"`
	}
	doc := struct {
		Version     int      `json:"version"`
		Entrypoints []record `json:"entrypoints"`
	}{Version: 1}
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, c := range cases {
		id := fmt.Sprintf("app-%03d", i)
		c.Payload["name"] = id
		p, err := json.Marshal(c.Payload)
		if err != nil {
			t.Fatal(err)
		}
		doc.Entrypoints = append(doc.Entrypoints, record{ID: id, Created: created, Payload: p})
	}
	file, _ := json.MarshalIndent(doc, "", "  ")
	path := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	codec := StandardCodec()
	st, err := OpenStore(StoreOptions{Path: path, Codec: codec, Sink: discardSink{}})
	if err != nil {
		t.Fatalf("OpenStore of the old state file: %v", err)
	}
	if got := len(st.List()); got != len(cases) {
		t.Fatalf("store holds %d entrypoints, want %d", got, len(cases))
	}
	decode := func(payload []byte, id string) config.Entrypoint {
		t.Helper()
		ep, _, err := codec.Decode(config.FormatJSON, payload, diagnostics.Source{Provider: config.SourceAPI, ObjectID: id, ObjectName: id})
		if err != nil {
			t.Fatalf("%s: decode: %v", id, err)
		}
		ep.Source, ep.Created = config.SourceAPI, created
		return ep
	}
	for i, rec := range doc.Entrypoints {
		e, ok := st.Get(rec.ID)
		if !ok {
			t.Fatalf("%s (%s) not loaded", rec.ID, cases[i].Field)
		}
		want := decode(rec.Payload, rec.ID)
		if !reflect.DeepEqual(e.Entrypoint, want) {
			t.Errorf("%s (%s): stored entrypoint\n %+v\nwant %+v", rec.ID, cases[i].Field, e.Entrypoint, want)
		}
		if again := decode(e.Payload, rec.ID); !reflect.DeepEqual(again, want) {
			t.Errorf("%s (%s): the store's payload %s decodes to\n %+v\nwant %+v", rec.ID, cases[i].Field, e.Payload, again, want)
		}
	}
}
