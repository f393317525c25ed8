// Package session owns a conversation with an agent: it opens or creates a
// session, runs a turn, starts over on /new, and closes with a bounded
// drain. Every front end (the `loom chat` REPL, the HTTP server, the
// OpenAI-compatible gateway, the MCP server) runs turns through this
// package; none re-implements a turn.
//
// A turn is two calls:
//
//	p, err := s.Prepare(ctx, in) // lock the session, render, build the list
//	// ... call the model with p.Messages, relay the reply ...
//	err = p.Record(ctx, session.Reply{Content: text}) // one write, unlock, then extraction
//
// [Session.Prepare] takes the session's turn lock (in this process and,
// for a [TurnLocker] store, across replicas), renders the system prompt
// and builds the message list. [Prepared.Record] stores the user's
// message and the reply in one write, releases the lock, and queues
// extraction and consolidation; [Prepared.Release] ends a turn that is not
// to be stored. A front end acknowledges a turn (a 200, a stream's last
// event) only after Record returned nil, so what a client saw acknowledged
// is stored, and turns of one session are stored in the order they were
// acknowledged. A turn with an ID ([TurnInput.ID], the gateway's
// Idempotency-Key or the conversation's hash) is stored once however
// often a client retries it. [Session.Turn] is Prepare, the model call and
// Record, for front ends that let the session call the model.
//
// # A turn
//
//	s, err := session.Open(ctx, session.Options{
//		Workspace: ws,                    // opened once, shared
//		Builder:   b,                     // optional: a cached prompt.Builder
//		Prompt:    prompt.Options{User: "ana", ChatID: "cli_ana"},
//		Key:       "cli_ana",             // the session's name in the store
//		Channel:   "cli", User: "ana",    // the runtime block
//		Client:    client,                // llm.Client
//		Counter:   counter,               // tokens; needed for consolidation
//		Extract:   worker,                // optional: memory extraction
//		Consolidate: &consolidate.Options{Threshold: 16000}, // optional
//	})
//	res, err := s.Turn(ctx, session.TurnInput{Text: "hello", OnDelta: print})
//	// or, for a client that holds the conversation (the gateway):
//	p, err := s.Prepare(ctx, session.TurnInput{Conversation: msgs, ID: key})
//	err = p.Record(ctx, session.Reply{Content: reply})
//	err = s.New(ctx)    // /new: archive into memory, start over
//	err = s.Close(ctx)  // waits for a running consolidation within ctx
//
// [Session.Turn] renders the system prompt with the builder (cached while
// the workspace is unchanged), reloads the saved history, cleans it
// ([messages.Clean]) and builds the message list with [messages.Build]
// (runtime block, skill expansion, merging after a failed turn), streams
// the model's reply, and saves the user's message and the reply together.
// Then it queues extraction and, when the unconsolidated history passes the
// threshold, starts a consolidation in the background.
//
// What the user typed is never lost: a reply cut by the context (Ctrl-C, a
// signal, a client that went away) or by a broken stream is saved as far as
// it came, with the Extra key [CutKey] giving the reason; the error comes
// back after saving. Saving does not depend on the turn's context.
//
// # Concurrency
//
// Turns on one session run one at a time in one process, through any
// Session with the same workspace and key: the lock is held from Prepare
// to Record. Across processes every store
// step is atomic under the store's lock, so each turn (the user's message
// and its reply) is saved whole, once, in order; a [TurnLocker] store
// serializes whole turns across replicas too. Turns on different sessions run in parallel. A writer
// never overwrites with a stale copy: appends are appends, and the two
// rewrites (moving the consolidation pointer, trimming on /new) re-read the
// file under its lock.
//
// Consolidation holds the memory files' lock ([consolidate.Files.Lock]) for
// the whole run, so two consolidations of one workspace never overlap. A
// background consolidation does not wait for the lock: if another process
// holds it, the next turn tries again. [Consolidate] and [ConsolidateFile]
// run one consolidation on demand (`loom memory consolidate`).
//
// # Stores
//
// [Store] has four steps: Load, Append, MoveConsolidated and Trim (plus
// Close). [FileStore] keeps one JSONL file per session under
// .loom/sessions/: a metadata record on the first line
// ({"_type":"metadata","key",...,"last_consolidated":N}), then one message
// per line with its "timestamp". It reads nanobot's session files as they
// are (naive timestamps are UTC; the metadata record and unknown keys are
// kept), and nanobot reads the files it writes. A database store implements
// the same interface (session/pgstore.go); a store that also implements
// [TurnLocker] has each turn and each /new held to one at a time across
// replicas.
//
// Every history reader of loom (`loom messages --history`, `loom history
// clean`, `loom memory consolidate`, this package) goes through
// [messages.ReadSessionFile], which caps the bytes read, decodes as it
// streams and refuses a folder with an error naming it.
package session
