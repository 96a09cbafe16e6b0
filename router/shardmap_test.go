package router

import (
	"fmt"
	"hash/maphash"
	"testing"
)

// An edit copies only the shards it writes, and the map it was made from
// never changes: published snapshots share their indexes with the next.
func TestShardMapEditLeavesTheOriginal(t *testing.T) {
	e := newShardMap[int](maphash.MakeSeed()).edit()
	for i := range 1000 {
		e.set(fmt.Sprint(i), i)
	}
	orig := e.done()
	ed := orig.edit()
	ed.set("0", -1)
	ed.set("new", 7)
	ed.delete("1")
	ed.delete("absent")
	next := ed.done()
	if v, _ := orig.get("0"); v != 0 || orig.len() != 1000 {
		t.Fatalf("the original changed: 0=%d, len %d", v, orig.len())
	}
	if _, ok := orig.get("new"); ok {
		t.Fatal("the original gained a key")
	}
	if v, _ := next.get("0"); v != -1 || next.len() != 1000 {
		t.Fatalf("the edit: 0=%d, len %d, want -1 and 1000", v, next.len())
	}
	if _, ok := next.getBytes([]byte("1")); ok {
		t.Fatal("a deleted key is still there")
	}
	shared := 0
	for i := range shards {
		if fmt.Sprintf("%p", orig.m[i]) == fmt.Sprintf("%p", next.m[i]) {
			shared++
		}
	}
	if shared < shards-3 {
		t.Fatalf("%d of %d shards shared after 3 writes, want at least %d", shared, shards, shards-3)
	}
	n := 0
	next.each(func(string, int) { n++ })
	if n != 1000 {
		t.Fatalf("each visited %d entries, want 1000", n)
	}
}
