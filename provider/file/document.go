package file

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// Format is how a config file is written.
type Format uint8

// Config file formats.
const (
	FormatYAML Format = iota
	FormatJSON
)

// formatOf names a file's format by its extension: .json is JSON, .yaml
// and .yml YAML. ok is false for any other name; such a file is read only
// when named by Options.Files, as sniffFormat says.
func formatOf(name string) (f Format, ok bool) {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".json":
		return FormatJSON, true
	case ".yaml", ".yml":
		return FormatYAML, true
	}
	return FormatYAML, false
}

// sniffFormat is the format of a file named without a known extension:
// JSON when its first non-blank byte opens a JSON object or list, else
// YAML.
func sniffFormat(data []byte) Format {
	t := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		return FormatJSON
	}
	return FormatYAML
}

// Top-level keys of a config file's document object: its entrypoints and
// its named policies (config.Policy, in the payload shape of PUT
// /policies/<name>).
const (
	keyEntrypoints = "entrypoints"
	keyPolicies    = "policies"
)

var documentKeys = []string{keyEntrypoints, keyPolicies}

// rawEntry is one entrypoint object of a file, before the validator:
// its value as the JSON payload shape, where it sits (index in the file,
// line when known) and its name when one could be read.
type rawEntry struct {
	index int
	line  int
	name  string
	value any
	// policy marks an item of the policies list, index counting those.
	policy bool
}

// syntaxError is a file that cannot be read as its format or does not
// have a config file's shape; line and column are 1-based, 0 when unknown.
type syntaxError struct {
	line, column int
	msg          string
}

func (e *syntaxError) Error() string { return e.msg }

// where renders the position as a diagnostic key.
func (e *syntaxError) where() string {
	switch {
	case e.line > 0 && e.column > 0:
		return fmt.Sprintf("line %d, column %d", e.line, e.column)
	case e.line > 0:
		return fmt.Sprintf("line %d", e.line)
	}
	return ""
}

// parseDocument reads a file into its entrypoint objects. The shapes
// accepted, for each YAML document of a stream (--- separated) or the JSON
// value:
//
//	{entrypoints: [ENTRYPOINT, ...]}   the documented shape
//	ENTRYPOINT                         an object with a name
//	[ENTRYPOINT, ...]                  a bare list
//
// where ENTRYPOINT is what POST /entrypoints accepts. An empty file (or
// an empty document) holds no entrypoints. Unknown top-level keys of the
// first shape are returned as W013 diagnostics about the file; a value of
// the wrong shape is a *syntaxError, as is a syntax error.
func parseDocument(format Format, data []byte, src diagnostics.Source) ([]rawEntry, []diagnostics.Diagnostic, error) {
	switch format {
	case FormatJSON:
		return parseJSON(data, src)
	default:
		return parseYAML(data, src)
	}
}

func parseJSON(data []byte, src diagnostics.Source) ([]rawEntry, []diagnostics.Diagnostic, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, nil, jsonSyntaxError(data, err, dec.InputOffset())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		line, col := lineColumn(data, int(dec.InputOffset()))
		return nil, nil, &syntaxError{line: line, column: col, msg: "malformed JSON: data after the top-level value"}
	}
	var entries []rawEntry
	ds, err := shape(v, nil, src, &entries)
	return entries, ds, err
}

// jsonSyntaxError places a JSON error at its byte offset.
func jsonSyntaxError(data []byte, err error, inputOffset int64) error {
	off := int(inputOffset)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = int(se.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		off = len(data)
	}
	line, col := lineColumn(data, off)
	return &syntaxError{line: line, column: col, msg: "malformed JSON: " + err.Error()}
}

// lineColumn converts an offset as encoding/json reports it (the bytes
// read, the offending one included) to the 1-based line and column of
// that byte (the column counts bytes, as compilers do).
func lineColumn(data []byte, off int) (int, int) {
	i := max(min(off-1, len(data)-1), 0)
	before := data[:i]
	line := bytes.Count(before, []byte("\n")) + 1
	return line, i - (bytes.LastIndexByte(before, '\n') + 1) + 1
}

// yamlLine finds the line in a yaml.v3 error ("yaml: line 7: did not find
// expected key"): the library reports lines, not columns.
var yamlLine = regexp.MustCompile(`line (\d+)`)

// yamlErrorLine is the 1-based line of a yaml.v3 error, 0 when it names
// none. The parser's errors ("did not find expected ...") give the line of
// the construct left open counted from 0, its scanner's and decoder's from
// 1; the first are moved to count from 1 too.
func yamlErrorLine(msg string) int {
	m := yamlLine.FindStringSubmatch(msg)
	if m == nil {
		return 0
	}
	line, _ := strconv.Atoi(m[1])
	if strings.Contains(msg, "did not find expected") {
		line++
	}
	return line
}

func parseYAML(data []byte, src diagnostics.Source) ([]rawEntry, []diagnostics.Diagnostic, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var entries []rawEntry
	var ds []diagnostics.Diagnostic
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return entries, ds, nil
		}
		if err != nil {
			return nil, ds, &syntaxError{line: yamlErrorLine(err.Error()), msg: "malformed YAML: " + yamlMessage(err)}
		}
		if len(doc.Content) == 0 {
			continue // an empty document: comments only
		}
		var v any
		if err := doc.Decode(&v); err != nil {
			line := cmp.Or(yamlErrorLine(err.Error()), doc.Content[0].Line)
			return nil, ds, &syntaxError{line: line, msg: "malformed YAML: " + yamlMessage(err)}
		}
		jv, err := config.JSONValueOfYAML(v)
		if err != nil {
			return nil, ds, &syntaxError{line: doc.Content[0].Line, msg: err.Error()}
		}
		more, err := shape(jv, doc.Content[0], src, &entries)
		ds = append(ds, more...)
		if err != nil {
			return nil, ds, err
		}
	}
}

// yamlMessage is a yaml.v3 error without its "yaml: line N:" prefix (the
// diagnostic's key says where) and on one line.
func yamlMessage(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:")
	msg = yamlLinePrefix.ReplaceAllString(msg, "")
	return strings.Join(strings.Fields(msg), " ")
}

var yamlLinePrefix = regexp.MustCompile(`(^|\n)\s*line \d+: `)

// shape finds the entrypoint objects of one document value (see
// parseDocument) and appends them to entries; node, when the file is YAML,
// is the document's root, for the entries' lines.
func shape(v any, node *yaml.Node, src diagnostics.Source, entries *[]rawEntry) ([]diagnostics.Diagnostic, error) {
	var ds []diagnostics.Diagnostic
	list, listNode := v, node
	switch x := v.(type) {
	case nil:
		return nil, nil
	case []any:
	case map[string]any:
		if nameKey, _ := lookupFold(x, "name"); nameKey != "" {
			if docKey, _ := lookupFold(x, keyEntrypoints); docKey == "" {
				*entries = append(*entries, entryOf(entrypointCount(*entries), x, node))
				return nil, nil
			}
		}
		var key string
		key, list = lookupFold(x, keyEntrypoints)
		listNode = mappingValue(node, key)
		polKey, pols := lookupFold(x, keyPolicies)
		if err := policiesOf(pols, mappingValue(node, polKey), entries); err != nil {
			return ds, err
		}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if !slices.ContainsFunc(documentKeys, func(d string) bool { return strings.EqualFold(d, k) }) {
				ds = append(ds, diagnostics.New(diagnostics.UnknownKey, src, k, "", "",
					fmt.Sprintf("unknown top-level field %q of a config file", k),
					diagnostics.DidYouMean(k, append(documentKeys, "name"))))
			}
		}
		if key == "" && polKey != "" {
			return ds, nil // policies only
		}
		if key == "" {
			return ds, &syntaxError{line: lineOf(node), msg: "a config file holds an object with an entrypoints list (or one entrypoint, or a list of them); this object has neither entrypoints nor name"}
		}
	default:
		return nil, &syntaxError{line: lineOf(node), msg: fmt.Sprintf("a config file holds an object with an entrypoints list, not %s", kindOf(v))}
	}
	items, ok := list.([]any)
	if list == nil {
		return ds, nil
	}
	if !ok {
		return ds, &syntaxError{line: lineOf(listNode), msg: fmt.Sprintf("entrypoints must be a list, not %s", kindOf(list))}
	}
	for i, item := range items {
		var n *yaml.Node
		if listNode != nil && listNode.Kind == yaml.SequenceNode && i < len(listNode.Content) {
			n = listNode.Content[i]
		}
		*entries = append(*entries, entryOf(entrypointCount(*entries), item, n))
	}
	return ds, nil
}

// entrypointCount is the number of entrypoints (not policies) in entries:
// the index of the next one.
func entrypointCount(entries []rawEntry) int {
	n := 0
	for _, e := range entries {
		if !e.policy {
			n++
		}
	}
	return n
}

// policiesOf appends the items of a document's policies list to entries,
// marked as policies.
func policiesOf(v any, node *yaml.Node, entries *[]rawEntry) error {
	if v == nil {
		return nil
	}
	items, ok := v.([]any)
	if !ok {
		return &syntaxError{line: lineOf(node), msg: fmt.Sprintf("policies must be a list, not %s", kindOf(v))}
	}
	for i, item := range items {
		var n *yaml.Node
		if node != nil && node.Kind == yaml.SequenceNode && i < len(node.Content) {
			n = node.Content[i]
		}
		e := entryOf(i, item, n)
		e.policy = true
		*entries = append(*entries, e)
	}
	return nil
}

func entryOf(index int, v any, node *yaml.Node) rawEntry {
	e := rawEntry{index: index, line: lineOf(node), value: v}
	if obj, ok := v.(map[string]any); ok {
		if _, name := lookupFold(obj, "name"); name != nil {
			e.name, _ = name.(string)
		}
	}
	return e
}

// lookupFold finds key in obj without regard to case, as payload keys are
// read; the exact spelling wins over another case.
func lookupFold(obj map[string]any, key string) (string, any) {
	if v, ok := obj[key]; ok {
		return key, v
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if strings.EqualFold(k, key) {
			return k, obj[k]
		}
	}
	return "", nil
}

// mappingValue is the value node of key in a YAML mapping, or nil.
func mappingValue(node *yaml.Node, key string) *yaml.Node {
	if node == nil || node.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(node.Content); i += 2 {
		if node.Content[i].Value == key {
			return node.Content[i+1]
		}
	}
	return nil
}

func lineOf(node *yaml.Node) int {
	if node == nil {
		return 0
	}
	return node.Line
}

func kindOf(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// payloadOf is an entry as the JSON payload the validator reads.
func payloadOf(e rawEntry) ([]byte, error) {
	b, err := json.Marshal(e.value)
	if err != nil {
		return nil, fmt.Errorf("entrypoints[%d]: %w", e.index, err)
	}
	return b, nil
}

// decodeEntry validates one entry with the API's decoder (config.
// DecodeEntrypoint: the same field table, fallbacks and codes as labels
// and POST /entrypoints) and gives it the file provider's id and source.
func decodeEntry(e rawEntry, src diagnostics.Source) (config.Entrypoint, []diagnostics.Diagnostic, error) {
	body, err := payloadOf(e)
	if err != nil {
		return config.Entrypoint{}, nil, &config.InputError{Status: 400, Message: err.Error()}
	}
	ep, ds, err := config.DecodeEntrypoint(config.FormatJSON, body, src)
	if err != nil {
		return config.Entrypoint{}, nil, err
	}
	ep.ID, ep.Source = IDOf(ep.Name), config.SourceFile
	return ep, ds, nil
}

// IDOf is the id of the file entrypoint called name: name@file, as Swarm
// services are name@swarm, so that it never collides with an API or
// container id and says where it came from.
func IDOf(name string) string { return name + "@" + config.SourceFile }
