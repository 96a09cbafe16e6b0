package api

import (
	"cmp"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// obj is a JSON object in the OpenAPI document; encoding/json sorts map
// keys, so the document is deterministic.
type obj = map[string]any

var pathParam = regexp.MustCompile(`\{([a-zA-Z_][a-zA-Z0-9_]*)\}`)

// openAPI builds the OpenAPI 3.0 document from the route table: one
// operation per route, so a route cannot exist undocumented.
func openAPI(routes []route) obj {
	paths := obj{}
	for _, rt := range routes {
		item, _ := paths[rt.path].(obj)
		if item == nil {
			item = obj{}
			paths[rt.path] = item
		}
		item[strings.ToLower(rt.method)] = operation(rt)
	}
	return obj{
		"openapi": "3.0.3",
		"info": obj{
			"title":       "Levee API",
			"version":     "1",
			"description": "Entrypoints (JSON or YAML, validated like labels, stored durably), diagnostics, breakers, events and metrics. See docs/api.md.",
		},
		"paths": paths,
		"components": obj{
			"securitySchemes": obj{
				"bearer": obj{"type": "http", "scheme": "bearer",
					"description": "--api-token (every method) or --api-read-token (GET only)."},
			},
			"schemas": withSchemas(schemas(), trafficSchemas()),
		},
		"security": []any{obj{"bearer": []any{}}},
	}
}

func operation(rt route) obj {
	op := obj{"operationId": rt.op, "summary": rt.summary}
	if rt.access == accessOpen {
		op["security"] = []any{}
	}
	var params []any
	for _, m := range pathParam.FindAllStringSubmatch(rt.path, -1) {
		params = append(params, obj{"name": m[1], "in": "path", "required": true, "schema": obj{"type": "string"}})
	}
	for _, q := range rt.query {
		params = append(params, obj{"name": q.name, "in": "query", "required": false, "description": q.doc, "schema": obj{"type": cmp.Or(q.typ, "string")}})
	}
	if params != nil {
		op["parameters"] = params
	}
	if rt.bodySchema != "" {
		op["requestBody"] = obj{"required": true, "content": obj{"application/json": obj{"schema": ref(rt.bodySchema)}}}
	}
	if rt.body {
		payload := obj{"schema": ref("EntrypointPayload")}
		op["requestBody"] = obj{
			"required": true,
			"content": obj{
				"application/json":   payload,
				"application/yaml":   payload,
				"application/x-yaml": payload,
				"text/yaml":          payload,
			},
		}
	}
	responses := obj{}
	for _, r := range rt.responses {
		desc := r.doc
		if desc == "" {
			desc = http.StatusText(r.status)
		}
		resp := obj{"description": desc}
		switch {
		case r.schema != "":
			resp["content"] = obj{"application/json": obj{"schema": ref(r.schema)}}
		case rt.stream && r.status == http.StatusOK:
			resp["content"] = obj{"text/event-stream": obj{"schema": obj{"type": "string"}}}
		case rt.text && r.status == http.StatusOK:
			resp["content"] = obj{"text/plain": obj{"schema": obj{"type": "string"}}}
		}
		responses[strconv.Itoa(r.status)] = resp
	}
	op["responses"] = responses
	return op
}

func ref(name string) obj { return obj{"$ref": "#/components/schemas/" + name} }

// schemas describe the bodies. Entrypoint payload fields are documented in
// docs/labels.md (generated from the config field table); here the payload
// is described by its top level, with additional fields allowed, so the
// document does not duplicate (and drift from) that table.
func schemas() obj {
	anyObject := obj{"type": "object", "additionalProperties": true}
	diagnostic := obj{
		"type": "object",
		"properties": obj{
			"code":     obj{"type": "string", "example": "W024"},
			"severity": obj{"type": "string", "enum": []string{"info", "warn", "error"}},
			"source": obj{"type": "object", "properties": obj{
				"provider":  obj{"type": "string"},
				"object_id": obj{"type": "string"},
				"object":    obj{"type": "string"},
				"service":   obj{"type": "string"},
			}},
			"key":      obj{"type": "string", "example": "config.circuit_breaker.threshold"},
			"value":    obj{"type": "string"},
			"fallback": obj{"type": "string"},
			"message":  obj{"type": "string"},
			"hint":     obj{"type": "string"},
		},
	}
	diagList := obj{"type": "array", "items": ref("Diagnostic")}
	payloadProps := obj{
		"name":     obj{"type": "string", "pattern": "^[a-z0-9][a-z0-9_-]*$", "description": "the id"},
		"protocol": obj{"type": "string", "example": "Http", "description": "Http (the default) or Tcp (see docs/tcp.md)"},
		"backends": obj{"type": "array", "items": obj{"type": "object", "additionalProperties": true, "properties": obj{
			"address": obj{"type": "string"},
			"port":    obj{"type": "integer"},
			"weight":  obj{"type": "integer"},
		}}},
		"config": obj{"type": "object", "additionalProperties": true, "description": "see docs/labels.md", "properties": obj{
			"hostnames": obj{"type": "array", "items": obj{"type": "string"}},
		}},
	}
	stored := obj{"type": "object", "additionalProperties": true, "properties": obj{}}
	for k, v := range payloadProps {
		stored["properties"].(obj)[k] = v
	}
	stored["properties"].(obj)["diagnostics"] = diagList
	return obj{
		"Diagnostic": diagnostic,
		"Error": obj{
			"type":     "object",
			"required": []string{"error", "diagnostics"},
			"properties": obj{
				"error":       obj{"type": "string"},
				"diagnostics": diagList,
			},
		},
		"EntrypointPayload": obj{
			"type":                 "object",
			"required":             []string{"name", "config"},
			"additionalProperties": true,
			"properties":           payloadProps,
		},
		"StoredEntrypoint": stored,
		"PolicyPayload": obj{
			"type": "object", "required": []string{"name"}, "additionalProperties": true,
			"properties": obj{"name": obj{"type": "string", "example": "office-only"},
				"config": obj{"type": "object", "additionalProperties": true, "description": "policy groups, as in an entrypoint's config (docs/policies.md#named-policies)"}},
		},
		"Policy": obj{"type": "object", "properties": obj{
			"name":        obj{"type": "string"},
			"source":      obj{"type": "string", "description": "the provider of the declaration in force"},
			"policy":      obj{"allOf": []any{ref("PolicyPayload")}, "description": "the canonical payload, hashes redacted"},
			"routes":      obj{"type": "array", "items": obj{"type": "string"}, "description": "ids of the routes that reference it"},
			"denies":      obj{"type": "boolean", "description": "every route using it denies: an access setting could not be read (an unknown key, or W039: declared twice with different access groups)"},
			"diagnostics": diagList,
		}},
		"PolicyList": obj{"type": "object", "properties": obj{"policies": obj{"type": "array", "items": ref("Policy")}}},
		"BulkRequest": obj{"type": "object", "required": []string{"operations"}, "properties": obj{
			"operations": obj{"type": "array", "items": obj{"type": "object", "required": []string{"op"}, "properties": obj{
				"op":         obj{"type": "string", "enum": []string{"create", "replace", "delete"}},
				"id":         obj{"type": "string", "description": "delete: the id; create/replace: optional, must match the payload's name"},
				"entrypoint": obj{"allOf": []any{ref("EntrypointPayload")}, "description": "create/replace: the payload"},
			}}},
		}},
		"EntrypointSet": obj{"type": "object", "required": []string{"entrypoints"}, "properties": obj{
			"entrypoints": obj{"type": "array", "items": ref("EntrypointPayload")},
		}},
		"BulkAnswer": obj{"type": "object", "required": []string{"dry_run", "results"}, "properties": obj{
			"dry_run": obj{"type": "boolean"},
			"error":   obj{"type": "string", "description": "when refused: how many operations failed; nothing was stored"},
			"results": obj{"type": "array", "items": obj{"type": "object", "properties": obj{
				"op":          obj{"type": "string", "description": "create, replace, delete; for PUT /entrypoints also unchanged (or set, when refused)"},
				"id":          obj{"type": "string"},
				"status":      obj{"type": "integer", "description": "what the single write would answer: 201, 200, 204, or 400/403/404/409/422 when refused"},
				"error":       obj{"type": "string"},
				"entrypoint":  obj{"allOf": []any{ref("EntrypointPayload")}, "description": "the stored (or would-be stored) payload"},
				"diagnostics": diagList,
			}}},
		}},
		"EntrypointStatus": obj{"type": "object", "additionalProperties": true, "properties": obj{
			"id":     obj{"type": "string"},
			"source": obj{"type": "string", "example": "docker"},
			"entrypoint": obj{"allOf": []any{ref("EntrypointPayload")},
				"description": "The effective config as routed, for every source, in the payload's shape: every field explicit, durations as Go duration strings"},
			"backends": obj{"type": "array", "items": obj{"type": "object", "additionalProperties": true, "properties": obj{
				"address":   obj{"type": "string"},
				"port":      obj{"type": "integer"},
				"weight":    obj{"type": "integer"},
				"name":      obj{"type": "string"},
				"up":        obj{"type": "boolean", "description": "The active health check's verdict (true without checks)"},
				"ejected":   obj{"type": "boolean", "description": "Passive ejection holds the backend out of rotation"},
				"in_flight": obj{"type": "integer"},
				"ejected_until": obj{"type": "string", "format": "date-time",
					"description": "While ejected: when the ejection ends (RFC 3339)"},
			}}},
			"breakers":    obj{"type": "array", "items": ref("BreakerStatus")},
			"diagnostics": diagList,
			"removed":     obj{"type": "boolean"},
			"payload":     obj{"allOf": []any{ref("EntrypointPayload")}, "description": "API entrypoints only: the stored payload, ready for PUT"},
		}},
		"EntrypointList": obj{"type": "object", "properties": obj{
			"entrypoints": obj{"type": "array", "items": ref("EntrypointStatus")},
			"next":        obj{"type": "string", "description": "with limit=: the after= of the next page; absent on the last"},
		}},
		"DiagnosticsReport": obj{"type": "object", "properties": obj{
			"totals":  obj{"type": "object", "additionalProperties": obj{"type": "integer"}},
			"by_code": obj{"type": "object", "additionalProperties": obj{"type": "integer"}},
			"objects": obj{"type": "array", "items": obj{"type": "object", "properties": obj{
				"provider":    obj{"type": "string"},
				"object_id":   obj{"type": "string"},
				"object":      obj{"type": "string"},
				"diagnostics": diagList,
			}}},
		}},
		"BreakerStatus": anyObject,
		"BreakerList": obj{"type": "object", "properties": obj{
			"breakers": obj{"type": "array", "items": ref("BreakerStatus")},
		}},
		"BreakerHistory": obj{"type": "object", "properties": obj{
			"interval_seconds": obj{"type": "number", "description": "the sampling interval"},
			"samples":          obj{"type": "integer", "description": "the most points a breaker keeps"},
			"breakers": obj{"type": "array", "items": obj{"type": "object", "properties": obj{
				"route":   obj{"type": "string"},
				"backend": obj{"type": "string", "description": "scope=backend breakers only"},
				"name":    obj{"type": "string"},
				"points": obj{"type": "array", "description": "oldest first", "items": obj{"type": "object", "properties": obj{
					"time":     obj{"type": "string", "format": "date-time", "description": "end of the interval"},
					"requests": obj{"type": "integer", "description": "requests that reached the breaker (admitted and rejected)"},
					"failures": obj{"type": "integer", "description": "admitted requests counted as failures"},
				}}},
			}}},
		}},
		"Session": obj{"type": "object", "properties": obj{
			"role":      obj{"type": "string", "enum": []string{"admin", "read", "open"}},
			"can_write": obj{"type": "boolean"},
		}},
		"Catalogue": obj{"type": "object", "properties": obj{
			"codes": obj{"type": "array", "items": obj{"type": "object", "properties": obj{
				"code":     obj{"type": "string", "example": "W024"},
				"severity": obj{"type": "string"},
				"title":    obj{"type": "string"},
				"effect":   obj{"type": "string"},
				"fix":      obj{"type": "string"},
				"example":  obj{"type": "string"},
			}}},
		}},
		"Health": obj{"type": "object", "properties": obj{"status": obj{"type": "string", "example": "ok"}}},
		"Readiness": obj{"type": "object", "properties": obj{
			"ready":   obj{"type": "boolean"},
			"pending": obj{"type": "array", "items": obj{"type": "string"}},
			"providers": obj{"type": "array", "items": obj{"type": "object", "required": []string{"name", "ready"}, "properties": obj{
				"name":  obj{"type": "string", "example": "docker"},
				"ready": obj{"type": "boolean", "description": "its first sync is done"},
				"state": obj{"type": "string", "example": "connected",
					"description": "connection to its source; docker: connecting, connected or disconnected"},
				"since":      obj{"type": "string", "format": "date-time", "description": "when the provider last became connected or stopped being connected (retries do not move it)"},
				"error":      obj{"type": "string", "description": "what ended the last attempt or connection; absent once connected"},
				"reconnects": obj{"type": "integer", "description": "connection attempts after the first"},
			}}},
			"error":       obj{"type": "string"},
			"diagnostics": diagList,
		}},
		"OpenAPIDocument": anyObject,
		"CertificateList": obj{"type": "object", "properties": obj{
			"certificates": obj{"type": "array", "items": obj{"type": "object", "required": []string{"host", "source"}, "properties": obj{
				"host":         obj{"type": "string", "example": "shop.example.com", "description": "a host name, a wildcard, or * for the default certificate"},
				"source":       obj{"type": "string", "enum": []string{"acme", "static", "default"}},
				"issuer":       obj{"type": "string"},
				"not_after":    obj{"type": "string", "format": "date-time"},
				"file":         obj{"type": "string", "description": "static certificates: the file"},
				"last_error":   obj{"type": "string", "description": "the latest failure to obtain or renew it"},
				"next_renewal": obj{"type": "string", "format": "date-time"},
			}}},
		}},
	}
}
