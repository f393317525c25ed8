package inspector_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// pageLog keeps what a browser test's page did — console messages,
// exceptions, requests and their answers, navigations, dialogs — beside
// the server's log, and prints both when the test fails (or always, with
// LOOM_TEST_PAGE_LOG=1): a page step that never answers otherwise leaves
// nothing to go on.
type pageLog struct {
	start time.Time
	mu    sync.Mutex
	lines []string
}

// maxLogLines bounds the log; String prints its first and last
// printedLines lines.
const maxLogLines, printedLines = 100_000, 1500

func (l *pageLog) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == maxLogLines {
		return
	}
	l.lines = append(l.lines, fmt.Sprintf("%7.3fs ", time.Since(l.start).Seconds())+fmt.Sprintf(format, args...))
}

func (l *pageLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) <= 2*printedLines {
		return strings.Join(l.lines, "\n")
	}
	return strings.Join(l.lines[:printedLines], "\n") +
		fmt.Sprintf("\n… %d lines …\n", len(l.lines)-2*printedLines) +
		strings.Join(l.lines[len(l.lines)-printedLines:], "\n")
}

// errors returns the page's uncaught exceptions and console errors.
func (l *pageLog) errors() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.lines {
		if _, rest, ok := strings.Cut(s, " page "); ok && (strings.HasPrefix(rest, "exception") || strings.HasPrefix(rest, "console error") || strings.HasPrefix(rest, "browser-log error")) {
			out = append(out, rest)
		}
	}
	return out
}

// watchPage starts logging ctx's page into a new pageLog (server's lines
// go to the same log through startServeLogged) and prints the log if the
// test fails.
func watchPage(t *testing.T, ctx context.Context, log *pageLog) {
	t.Helper()
	urls := map[network.RequestID]string{} // only touched by the listener
	err := chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			var args []string
			for _, a := range e.Args {
				args = append(args, remoteText(a))
			}
			log.add("page console %s: %s", e.Type, strings.Join(args, " "))
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			text := d.Text
			if d.Exception != nil {
				text += " " + remoteText(d.Exception)
			}
			log.add("page exception at %s:%d:%d: %s", d.URL, d.LineNumber, d.ColumnNumber, text)
		case *network.EventRequestWillBeSent:
			urls[e.RequestID] = e.Request.URL
			log.add("page request %s %s %s", e.RequestID, e.Request.Method, e.Request.URL)
		case *network.EventResponseReceived:
			log.add("page response %s %d %s", e.RequestID, e.Response.Status, e.Response.URL)
		case *network.EventLoadingFinished:
			log.add("page finished %s (%.0f bytes) %s", e.RequestID, e.EncodedDataLength, urls[e.RequestID])
			delete(urls, e.RequestID)
		case *network.EventLoadingFailed:
			log.add("page failed %s %s canceled=%v %s", e.RequestID, e.ErrorText, e.Canceled, urls[e.RequestID])
			delete(urls, e.RequestID)
		case *network.EventEventSourceMessageReceived:
			log.add("page event-source %s %q %q", e.RequestID, e.EventName, e.Data)
		case *page.EventFrameRequestedNavigation:
			log.add("page navigation requested (%s) to %s", e.Reason, e.URL)
		case *page.EventFrameNavigated:
			log.add("page navigated to %s", e.Frame.URL)
		case *cdplog.EventEntryAdded:
			log.add("page browser-log %s %s: %s %s", e.Entry.Level, e.Entry.Source, e.Entry.Text, e.Entry.URL)
		case *page.EventJavascriptDialogOpening:
			log.add("page dialog %s: %s", e.Type, e.Message)
		}
	})
	if err != nil {
		t.Fatalf("listen to the page: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("LOOM_TEST_PAGE_LOG") == "1" {
			t.Logf("the page's and the server's log:\n%s", log)
		}
	})
}

func remoteText(o *runtime.RemoteObject) string {
	if o == nil {
		return ""
	}
	if o.Description != "" {
		return o.Description
	}
	if len(o.Value) > 0 {
		return string(o.Value)
	}
	return string(o.Type)
}
