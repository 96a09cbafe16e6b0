package api

import "github.com/levee-proxy/levee/api/store"

// The API's entrypoints are held by package api/store; these names keep
// the API's own spelling of it.
type (
	Store        = store.Store
	StoreOptions = store.Options
	Entry        = store.Entry
	Change       = store.Change
	SetResult    = store.SetResult
)

// Kinds of Change.
const (
	OpCreate  = store.OpCreate
	OpReplace = store.OpReplace
	OpDelete  = store.OpDelete
)

// Errors returned by Store changes (see package api/store).
var (
	ErrExists    = store.ErrExists
	ErrAbsent    = store.ErrAbsent
	ErrDuplicate = store.ErrDuplicate
	ErrRefused   = store.ErrRefused
)

// OpenStore is store.Open.
func OpenStore(opts StoreOptions) (*Store, error) { return store.Open(opts) }
