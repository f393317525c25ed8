package prompt

import (
	"strconv"
	"strings"
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
	optsKey   string // the options
	inputsKey string // what gathering found besides files
	memStamp  string // the memories' state before gathering (Builder.memStamp)
	gen       uint64 // the workspace's generation after gathering
	at        time.Time
	result    *Result
	err       error
}

// optsKey writes every option that shapes the prompt.
func optsKey(o Options) string {
	var b strings.Builder
	field := func(s string) {
		b.WriteString(strconv.Quote(s))
		b.WriteByte(' ')
	}
	field(o.Preset)
	field(o.Channel)
	field(o.ChatURL)
	if o.Fork != nil {
		field(o.Fork.Title)
		field(o.Fork.Author)
		field(o.Fork.Selection)
	} else {
		field("\x00nofork")
	}
	field(strconv.FormatBool(o.Subagent))
	field(o.Now.Format(time.RFC3339Nano))
	field(o.Timezone)
	field(strconv.FormatBool(o.TestMode))
	if o.Tools == nil {
		field("\x00alltools")
	} else {
		field(strings.Join(o.Tools, ","))
	}
	field(o.User)
	field(o.ChatID)
	field(strconv.Itoa(o.MemoryBudget))
	field(strconv.Itoa(o.Budget))
	field(o.Encoding)
	field(o.Model)
	field(o.GOOS)
	field(o.GOARCH)
	field(strconv.FormatBool(o.NoCounts))
	return b.String()
}

// inputsKey writes what a gather found that no file records: the date the
// analyst sees, and each skill's availability.
func (st *state) inputsKey() string {
	var b strings.Builder
	if st.preset == Analyst && !st.opts.Subagent {
		b.WriteString(st.now.In(st.loc).Format("2006-01-02"))
		b.WriteString(st.loc.String())
	}
	b.WriteByte('|')
	if st.skills != nil {
		// A loader hands out a new Set whenever a skill or its
		// availability changed.
		b.WriteString(strconv.FormatUint(st.skills.ID(), 10))
	}
	b.WriteByte('|')
	if st.memories != nil {
		b.WriteString(st.memoryKey)
	}
	return b.String()
}
