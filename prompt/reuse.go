package prompt

import (
	"slices"
	"time"
)

// A render is reused when nothing it depends on has changed: the options,
// the files (the workspace's generation counts every change its door has
// observed), the skills' availability (PATH and environment) and the
// analyst's date. Rendering the same tree again would give the same bytes,
// so it is skipped.

// freshFor bounds how long a watched workspace's result is reused without
// gathering again, so that what no watcher sees (a program installed on
// PATH, an environment variable, the date) is picked up soon.
const freshFor = 2 * time.Second

type lastRender struct {
	opts     *Options // the options, a copy no caller can change (see frozen)
	inputs   inputs   // what gathering found besides files
	memStamp string   // the memories' state before gathering (Builder.memStamp)
	gen      uint64   // the workspace's generation after gathering
	at       time.Time
	result   *Result
	err      error
}

// sameOptions reports whether a and b shape the same prompt. It compares
// every field: a render's options are matched against the last ones on
// every call, so they are compared where they stand rather than written
// out as a key. Two times are the same only when they are the same value,
// location included (a time the same instant elsewhere is only a miss).
func sameOptions(a, b *Options) bool {
	return a.Preset == b.Preset && a.Channel == b.Channel && a.ChatURL == b.ChatURL &&
		sameFork(a.Fork, b.Fork) && a.Subagent == b.Subagent &&
		a.Now == b.Now && a.Timezone == b.Timezone && a.TestMode == b.TestMode &&
		(a.Tools == nil) == (b.Tools == nil) && slices.Equal(a.Tools, b.Tools) &&
		a.User == b.User && a.ChatID == b.ChatID && a.MemoryBudget == b.MemoryBudget &&
		a.Budget == b.Budget && a.Encoding == b.Encoding && a.Model == b.Model &&
		a.GOOS == b.GOOS && a.GOARCH == b.GOARCH && a.NoCounts == b.NoCounts
}

func sameFork(a, b *Fork) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// frozen is a copy of o that shares nothing a caller could change later:
// its fork and tool list are copied.
func frozen(o Options) *Options {
	if o.Fork != nil {
		f := *o.Fork
		o.Fork = &f
	}
	if o.Tools != nil {
		o.Tools = slices.Clone(o.Tools)
	}
	return &o
}

// inputs is what a gather found that no file records: the date the
// analyst sees, and each skill's availability.
type inputs struct {
	date      string
	zone      string
	skills    uint64 // the Set's ID: a loader hands out a new Set whenever a skill or its availability changed
	hasSkills bool
	memory    string
	hasMemory bool
}

// inputsKey is the render's inputs.
func (st *state) inputsKey() inputs {
	var in inputs
	if st.preset == Analyst && !st.opts.Subagent {
		in.date, in.zone = st.now.In(st.loc).Format("2006-01-02"), st.loc.String()
	}
	if st.skills != nil {
		in.skills, in.hasSkills = st.skills.ID(), true
	}
	if st.memories != nil {
		in.memory, in.hasMemory = st.memoryKey, true
	}
	return in
}
