package consolidate

import (
	"context"
	"fmt"
)

// RunOptions are the inputs of Run, the library side of
// `loom memory consolidate -w DIR --history FILE`.
type RunOptions struct {
	Options
	// History is the session or history file to consolidate.
	History string
	// All consolidates everything after the pointer, not only what passes
	// the threshold (what /new does before starting over).
	All bool
	// DryRun reports what would be consolidated without calling the model.
	DryRun bool
}

// Report says what Run did.
type Report struct {
	Messages     int       `json:"messages"`
	Tokens       int       `json:"unconsolidated_tokens"`
	Threshold    int       `json:"threshold"`
	PointerFrom  int       `json:"pointer_from"`
	PointerTo    int       `json:"pointer_to"`
	Outcomes     []Outcome `json:"outcomes"`
	SessionSaved bool      `json:"session_saved"`
}

// Run consolidates the history file opts.History into opts.Files and,
// when both memory files were written, saves the moved pointer back into
// the file's metadata line.
func Run(ctx context.Context, opts RunOptions) (Report, error) {
	s, err := ReadSession(opts.History)
	if err != nil {
		return Report{}, err
	}
	c := New(opts.Options)
	rep := Report{
		Messages:    len(s.Messages),
		Tokens:      c.Tokens(s.Messages[s.LastConsolidated:]),
		Threshold:   c.opts.Threshold,
		PointerFrom: s.LastConsolidated,
		PointerTo:   s.LastConsolidated,
	}
	if opts.DryRun {
		if opts.All {
			rep.PointerTo = len(s.Messages)
		} else if end, ok := c.Plan(s.Messages, s.LastConsolidated); ok {
			rep.PointerTo = end
		}
		return rep, nil
	}
	last := s.LastConsolidated
	if opts.All {
		var out Outcome
		out, err = c.Archive(ctx, s.Messages, last)
		rep.Outcomes = append(rep.Outcomes, out)
		if err == nil {
			last = len(s.Messages)
		}
	} else {
		last, rep.Outcomes, err = c.Maybe(ctx, s.Messages, last)
	}
	if last != s.LastConsolidated {
		s.LastConsolidated = last
		if serr := s.Save(opts.History); serr != nil {
			return rep, fmt.Errorf("%s: save pointer: %w", opts.History, serr)
		}
		rep.SessionSaved = true
	}
	rep.PointerTo = last
	return rep, err
}
