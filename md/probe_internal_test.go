package md

import "testing"

// A pass that wants one item's place takes only that item from a cached
// fragment, but a scope recording its own fragment around it must take
// them all: a later pass may reuse that fragment whole.
func TestTrackAddFiltersOnlyOutsideRecording(t *testing.T) {
	f := &trackFragment{lists: 1}
	for i := range 10 {
		f.items = append(f.items, trackedItem{idx: int32(i), start: -1})
	}
	tr := &listTrack{only: true, onlyIdx: 105}
	tr.add(f, 0, 100)
	if len(tr.items) != 1 || tr.items[0].idx != 105 || tr.lists != 1 {
		t.Fatalf("filtered add kept %+v (lists %d)", tr.items, tr.lists)
	}
	tr.recording = 1
	tr.add(f, 0, 200)
	if len(tr.items) != 11 || tr.lists != 2 {
		t.Fatalf("add while recording kept %d items (lists %d), want 11 (2)", len(tr.items), tr.lists)
	}
}
