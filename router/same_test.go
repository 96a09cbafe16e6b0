package router

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/router/config"
)

// allocated returns a zero value of t with every pointer to a struct
// allocated, recursively, so that a change deep inside is compared field
// by field rather than caught by a nil check.
func allocated(t reflect.Type) reflect.Value {
	v := reflect.New(t).Elem()
	fill(v)
	return v
}

func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	case reflect.Pointer:
		if v.Type().Elem().Kind() == reflect.Struct && hasExported(v.Type().Elem()) {
			v.Set(reflect.New(v.Type().Elem()))
			fill(v.Elem())
		}
	}
}

func hasExported(t reflect.Type) bool {
	for i := range t.NumField() {
		if t.Field(i).IsExported() {
			return true
		}
	}
	return false
}

// leafChanges calls change once per leaf field under v (reached by path),
// with a function that sets that leaf of a value like v to a non-zero value.
func leafChanges(t reflect.Type, path string, set func(reflect.Value) reflect.Value, each func(path string, change func(reflect.Value))) {
	switch {
	case t == reflect.TypeOf(time.Time{}):
		each(path, func(root reflect.Value) { set(root).Set(reflect.ValueOf(time.Unix(5, 0))) })
	case t.Kind() == reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			i := i
			leafChanges(f.Type, path+"."+f.Name, func(root reflect.Value) reflect.Value { return set(root).Field(i) }, each)
		}
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct && hasExported(t.Elem()):
		each(path+"=nil", func(root reflect.Value) { set(root).Set(reflect.Zero(t)) })
		leafChanges(t.Elem(), path, func(root reflect.Value) reflect.Value { return set(root).Elem() }, each)
	default:
		each(path, func(root reflect.Value) {
			leaf := set(root)
			switch leaf.Kind() {
			case reflect.String:
				leaf.SetString("x")
			case reflect.Bool:
				leaf.SetBool(true)
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
				leaf.SetInt(7)
			case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
				leaf.SetUint(7)
			case reflect.Float32, reflect.Float64:
				leaf.SetFloat(0.5)
			case reflect.Slice:
				leaf.Set(reflect.Append(reflect.MakeSlice(leaf.Type(), 0, 1), allocated(leaf.Type().Elem())))
			case reflect.Map:
				m := reflect.MakeMap(leaf.Type())
				m.SetMapIndex(allocated(leaf.Type().Key()), allocated(leaf.Type().Elem()))
				leaf.Set(m)
			default:
				panic("router: no change written for " + leaf.Type().String())
			}
		})
	}
}

// Rebuilds reuse a route whose entrypoint sameEntrypoint calls unchanged,
// so every field of config.Entrypoint, however deep, must count: a field
// it missed would leave the route running its old config. Each leaf is
// changed in turn on an entrypoint whose every group is present.
func TestSameEntrypointSeesEveryField(t *testing.T) {
	typ := reflect.TypeOf(config.Entrypoint{})
	n := 0
	leafChanges(typ, "Entrypoint", func(root reflect.Value) reflect.Value { return root }, func(path string, change func(reflect.Value)) {
		base := allocated(typ)
		changed := allocated(typ)
		change(changed)
		a, b := base.Interface().(config.Entrypoint), changed.Interface().(config.Entrypoint)
		if reflect.DeepEqual(a, b) {
			t.Errorf("%s: the change did not change the entrypoint (test bug)", path)
			return
		}
		n++
		if sameEntrypoint(&a, &b) {
			t.Errorf("%s: sameEntrypoint does not see a change of this field, so a rebuild would keep the route's old config", path)
		}
		if !sameEntrypoint(&a, &a) {
			t.Errorf("%s: sameEntrypoint(a, a) = false", path)
		}
	})
	if n < 40 || !strings.HasPrefix(typ.Name(), "Entrypoint") {
		t.Fatalf("only %d fields changed: the walk missed the entrypoint's groups", n)
	}
}
