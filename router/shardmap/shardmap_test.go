package shardmap

import (
	"fmt"
	"hash/maphash"
	"testing"
)

// An edit copies only the Shards it writes, and the map it was made from
// never changes: published snapshots share their indexes with the next.
func TestEditLeavesTheOriginal(t *testing.T) {
	e := New[int](maphash.MakeSeed()).Edit()
	for i := range 1000 {
		e.Set(fmt.Sprint(i), i)
	}
	orig := e.Done()
	ed := orig.Edit()
	ed.Set("0", -1)
	ed.Set("new", 7)
	ed.Delete("1")
	ed.Delete("absent")
	next := ed.Done()
	if v, _ := orig.Get("0"); v != 0 || orig.Len() != 1000 {
		t.Fatalf("the original changed: 0=%d, len %d", v, orig.Len())
	}
	if _, ok := orig.Get("new"); ok {
		t.Fatal("the original gained a key")
	}
	if v, _ := next.Get("0"); v != -1 || next.Len() != 1000 {
		t.Fatalf("the edit: 0=%d, len %d, want -1 and 1000", v, next.Len())
	}
	if _, ok := next.GetBytes([]byte("1")); ok {
		t.Fatal("a deleted key is still there")
	}
	shared := 0
	for i := range Shards {
		if fmt.Sprintf("%p", orig.m[i]) == fmt.Sprintf("%p", next.m[i]) {
			shared++
		}
	}
	if shared < Shards-3 {
		t.Fatalf("%d of %d shards shared after 3 writes, want at least %d", shared, Shards, Shards-3)
	}
	n := 0
	next.Each(func(string, int) { n++ })
	if n != 1000 {
		t.Fatalf("each visited %d entries, want 1000", n)
	}
}
