package inspector_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/loomctx/loom/internal/testenv"
)

// buildLoom builds the loom binary once per test process.
func buildLoom(t testing.TB) string {
	t.Helper()
	return testenv.LoomBinary(t)
}

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveLoomBinary()
	os.Exit(code)
}

func writeFile(t *testing.T, root, rel, text string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// browserWorkspace is an assistant workspace with a few skills, one of them
// broken, so every tab has something to show.
func browserWorkspace(t *testing.T) string {
	root := t.TempDir()
	writeFile(t, root, "AGENTS.md", "# Agents\n\nBe brief and exact. Use **tables** for numbers and `code` for names.\n\n- first rule\n- second rule\n")
	writeFile(t, root, "SOUL.md", "You are calm and careful.\n")
	writeFile(t, root, "USER.md", "The user is a data engineer.\n")
	for i, name := range []string{"greet", "report", "summarise", "translate", "plot"} {
		writeFile(t, root, "skills/"+name+"/SKILL.md", fmt.Sprintf("---\nname: %s\ndescription: Skill number %d, which does %s things for the user in some detail.\n---\nBody of %s.\n", name, i, name, name))
	}
	writeFile(t, root, "skills/broken/SKILL.md", "---\nname: [unclosed\n---\nx\n")
	return root
}

// startServe runs `loom serve` on a free port and returns its base URL.
func startServe(t testing.TB, bin, root string) string {
	t.Helper()
	return startServeEnv(t, bin, root, nil)
}

// startServeEnv is startServe with variables added to loom's environment.
func startServeEnv(t testing.TB, bin, root string, env []string) string {
	t.Helper()
	return startServeLogged(t, bin, root, env, nil)
}

// startServeLogged is startServeEnv that, given a log, writes every line
// loom logs there, each request among them.
func startServeLogged(t testing.TB, bin, root string, env []string, log *pageLog) string {
	t.Helper()
	level := "warn"
	if log != nil {
		level = "info"
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "serve", "-w", root, "--addr", "127.0.0.1:0", "--log-level", level)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cancel()
		}
		cancel()
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if log != nil {
				log.add("server %s", sc.Text())
			}
			if _, a, ok := strings.Cut(sc.Text(), "serving on "); ok {
				addr <- a
			}
		}
	}()
	select {
	case a := <-addr:
		return a
	case <-time.After(30 * time.Second):
		t.Fatal("loom serve did not start within 30s")
		return ""
	}
}

// renderJSON is `loom render --format json` with args.
func renderJSON(t *testing.T, bin, root string, args ...string) (report struct {
	Tokens   int `json:"tokens"`
	Sections []struct {
		Name    string   `json:"name"`
		Tokens  int      `json:"tokens"`
		Status  string   `json:"status"`
		Sources []string `json:"sources"`
	} `json:"sections"`
}) {
	t.Helper()
	out, err := exec.Command(bin, append([]string{"render", "-w", root, "--format", "json"}, args...)...).Output()
	if err != nil {
		t.Fatalf("loom render: %v", err)
	}
	var res struct {
		Report json.RawMessage `json:"report"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(res.Report, &report); err != nil {
		t.Fatal(err)
	}
	return report
}

type pageSection struct {
	Name   string `json:"name"`
	Tokens int    `json:"tokens"`
	Status string `json:"status"`
}

const sectionsJS = `[...document.querySelectorAll("#sections [data-name][data-tokens]")].map(d => ({name: d.dataset.name, tokens: +d.dataset.tokens, status: d.dataset.status}))`

// eval evaluates js in the page; a promise is awaited, for a minute at
// most: a page that never answers fails here, with the script named, not
// at the package's timeout.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	outer := ctx
	ctx, cancel := bounded(t, ctx)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %.80q: %v\nthe page now: %s", js, err, pageState(outer))
	}
	return v
}

// pageState describes the page in a few words for a failed step, if it
// answers within five seconds.
func pageState(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify({
		url: location.href, readyState: document.readyState,
		inspector: window.loomInspector,
		recallTerms: (document.getElementById("recall-terms") || {}).textContent,
		recallNote: (document.getElementById("recall-note") || {}).textContent,
		message: (document.querySelector("input[name=message]") || {}).value})`))
	if err != nil {
		return fmt.Sprintf("(no answer: %v)", err)
	}
	return s
}

// bounded is ctx, a chromedp context, with a minute's timeout for one
// step. The browser is started on ctx itself first (a no-op once it runs):
// started under the timeout's context, it would close with it.
func bounded(t *testing.T, ctx context.Context) (context.Context, context.CancelFunc) {
	t.Helper()
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start the browser: %v", err)
	}
	return context.WithTimeout(ctx, time.Minute)
}

func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := bounded(t, ctx)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// timedRefresh runs action in the page and resolves with the milliseconds
// until the view has been re-rendered and cond holds.
//
// The checks poll on a timer, not requestAnimationFrame: a headless page
// that draws no frame may run no frame callbacks. A cond that throws
// rejects the promise: thrown from a timer's callback, the error would
// end the polling and leave the promise settled neither way, which is
// how step 5b used to hang (a view without the recall list, rendered
// just before the message's own, made its cond read a property of
// undefined).
func timedRefresh(action, cond string) string {
	return `new Promise((resolve, reject) => {
		const t0 = performance.now();
		const before = window.loomInspector.renders;
		` + action + `;
		const check = () => {
			try {
				if (window.loomInspector.renders > before && (` + cond + `)) { resolve(performance.now() - t0); return; }
			} catch (e) { reject(e); return; }
			if (performance.now() - t0 > 5000) { reject(new Error("timed out")); return; }
			setTimeout(check, 5);
		};
		check();
	})`
}

func TestInspectorInBrowser(t *testing.T) {
	chromium := testenv.Chromium(t)
	bin := buildLoom(t)
	root := browserWorkspace(t)
	log := &pageLog{start: time.Now()}
	base := startServeLogged(t, bin, root, nil, log)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()

	watchPage(t, ctx, log)

	log.add("test step 1")
	// 1. The page opens; the sections and their tokens match loom render.
	do(t, ctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible("details.section"))
	fcp := eval[float64](t, ctx, `(performance.getEntriesByName("first-contentful-paint")[0] || {startTime: -1}).startTime`)
	do(t, ctx, chromedp.Reload(), chromedp.WaitVisible("details.section"))
	warm := eval[float64](t, ctx, `(performance.getEntriesByName("first-contentful-paint")[0] || {startTime: -1}).startTime`)
	t.Logf("navigation to first paint of the sections: %.0f ms cold (the browser's first page), %.0f ms warm", fcp, warm)
	got := eval[[]pageSection](t, ctx, sectionsJS)
	want := renderJSON(t, bin, root)
	wantAll := map[string]pageSection{}
	for _, s := range want.Sections {
		wantAll[s.Name] = pageSection{s.Name, s.Tokens, s.Status}
	}
	gotAll := map[string]pageSection{}
	for _, s := range got {
		gotAll[s.Name] = s
	}
	if fmt.Sprint(gotAll) != fmt.Sprint(wantAll) {
		t.Errorf("page sections and parts\n%v\nwant loom render's\n%v", gotAll, wantAll)
	}
	if total := eval[string](t, ctx, `document.getElementById("total-tokens").textContent`); !strings.HasPrefix(total, fmt.Sprint(want.Tokens)) {
		t.Errorf("total tokens on the page %q, want %d", total, want.Tokens)
	}
	if diag := eval[string](t, ctx, `(document.getElementById("diagnostics") || {}).textContent || ""`); !strings.Contains(diag, "skills/broken/SKILL.md") {
		t.Errorf("diagnostics %q do not name the broken skill's file", diag)
	}

	log.add("test step 2")
	// 2. Lowering the budget shows parts as dropped, with their reason,
	// without a reload.
	budget := want.Tokens - 60
	eval[bool](t, ctx, `window.__noReload = true`)
	ms := eval[float64](t, ctx, timedRefresh(
		fmt.Sprintf(`const b = document.querySelector("input[name=budget]"); b.value = "%d"; b.dispatchEvent(new Event("input", {bubbles: true}))`, budget),
		`document.querySelector('[data-status="dropped"]') !== null`))
	t.Logf("budget change to updated view: %.0f ms", ms)
	if !eval[bool](t, ctx, `window.__noReload === true`) {
		t.Errorf("the page reloaded on a budget change")
	}
	if reason := eval[string](t, ctx, `(document.querySelector('.part.dropped, details.section.dropped .reason') || {}).textContent || ""`); !strings.Contains(reason, "budget") {
		t.Errorf("dropped entry reads %q, want its reason naming the budget", reason)
	}
	nPage := eval[int](t, ctx, `document.querySelectorAll('[data-status="dropped"]').length`)
	nd := 0
	for _, s := range renderJSON(t, bin, root, "--budget", fmt.Sprint(budget)).Sections {
		if s.Status == "dropped" {
			nd++
		}
	}
	if nPage != nd || nd == 0 {
		t.Errorf("the page shows %d dropped entries at budget %d, loom render reports %d", nPage, budget, nd)
	}
	eval[float64](t, ctx, timedRefresh(`const b = document.querySelector("input[name=budget]"); b.value = ""; b.dispatchEvent(new Event("input", {bubbles: true}))`, `true`))

	log.add("test step 3")
	// 3. Pin the render for the cache diff, then edit a file on disk: the
	// new text shows within 2 s, without a reload.
	eval[float64](t, ctx, timedRefresh(`document.querySelector('[data-tab="cache"]').click(); document.getElementById("pin").click()`, `document.querySelectorAll("#pins option").length > 0`))
	editAt := time.Now()
	writeFile(t, root, "SOUL.md", "You are calm and careful. EDITED-MARKER-7.\n")
	ms = eval[float64](t, ctx, `new Promise((resolve, reject) => {
		const t0 = performance.now();
		const check = () => {
			if (document.getElementById("view").textContent.includes("EDITED-MARKER-7")) { resolve(performance.now() - t0); return; }
			if (performance.now() - t0 > 2000) { reject(new Error("the edit did not show within 2s")); return; }
			setTimeout(check, 5);
		};
		check();
	})`)
	t.Logf("file edit to updated view: %v (%.0f ms in the page)", time.Since(editAt).Round(time.Millisecond), ms)

	log.add("test step 4")
	// 4. The cache diff names the changed section: the one on the page
	// that holds SOUL.md's part.
	soulSection := eval[string](t, ctx, `(() => { const p = document.querySelector('#sections [data-name="soul"]'); return p ? p.closest("details.section").dataset.name : "" })()`)
	do(t, ctx, chromedp.Click(`[data-tab="cache"]`), chromedp.Click("#compare"), chromedp.WaitVisible("#diff-section"))
	diffSection := eval[string](t, ctx, `document.getElementById("diff-section").textContent`)
	if soulSection == "" || diffSection != soulSection {
		t.Errorf("the cache diff names section %q, want %q (the one holding SOUL.md)", diffSection, soulSection)
	}
	if part := eval[string](t, ctx, `(document.getElementById("diff-part") || {}).textContent || ""`); part != "soul" {
		t.Errorf("the cache diff names part %q, want soul", part)
	}
	t.Logf("cache diff: %s", eval[string](t, ctx, `document.querySelector("#diffview p").textContent`))

	log.add("test step 5")
	// 5. The memory form adds a memory, which then appears in the prompt.
	do(t, ctx, chromedp.Click(`[data-tab="memory"]`), chromedp.SendKeys(`#add-memory input[name=content]`, "The user prefers metric units."))
	eval[float64](t, ctx, timedRefresh(`document.querySelector("#add-memory button").click()`, `document.getElementById("selected").textContent.includes("metric units")`))
	if !eval[bool](t, ctx, `[...document.querySelectorAll("details.section pre.raw")].some(p => p.textContent.includes("The user prefers metric units."))`) {
		t.Errorf("the memory added with the form is not in the prompt")
	}

	log.add("test step 5b")
	// 5b. The message control shows what a turn with that message would
	// recall: the words searched, and the recalled list (empty here: the
	// one matching memory is already in the system prompt).
	eval[float64](t, ctx, timedRefresh(`const m = document.querySelector("input[name=message]"); m.value = "Which metric units?"; m.dispatchEvent(new Event("input", {bubbles: true}))`,
		`(document.getElementById("recall-terms")?.textContent ?? "").startsWith("searched: metric, units") && document.getElementById("recalled") !== null`))
	if !strings.Contains(eval[string](t, ctx, `location.search`), "message=Which+metric+units") {
		t.Errorf("the message control is not kept in the page's query")
	}
	eval[float64](t, ctx, timedRefresh(`const m = document.querySelector("input[name=message]"); m.value = ""; m.dispatchEvent(new Event("input", {bubbles: true}))`,
		`document.getElementById("recall-terms") === null`))

	// 5c. Left alone, the page stays still. Each of its renders reads the
	// memory database, and it used to be told of that as a workspace
	// change, so once a memory existed it refreshed about 15 times a
	// second for as long as it was open (one refresh is allowed here for
	// a late report of step 5's write).
	log.add("test step 5c")
	if n := eval[int](t, ctx, `new Promise(resolve => { const n = window.loomInspector.renders; setTimeout(() => resolve(window.loomInspector.renders - n), 1000) })`); n > 1 {
		t.Errorf("the page refreshed %d times in a second with nothing changed", n)
	}

	log.add("test step 6")
	// 6. Screenshots, wide and at 390 px, and nothing wider than the phone.
	do(t, ctx, chromedp.Click(`[data-tab="prompt"]`))
	full, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	shot := filepath.Join(dir, "inspector.png")
	os.WriteFile(shot, full, 0o644)
	t.Logf("screenshot: %s", shot)
	do(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Sleep(200*time.Millisecond))
	width := eval[int](t, ctx, `document.documentElement.scrollWidth`)
	phone, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	shot390 := filepath.Join(dir, "inspector-390.png")
	os.WriteFile(shot390, phone, 0o644)
	t.Logf("screenshot at 390 px: %s", shot390)
	if width > 392 {
		t.Errorf("at a 390 px viewport the page is %d px wide", width)
	}
	if keep := os.Getenv("LOOM_INSPECTOR_SHOTS"); keep != "" {
		os.WriteFile(filepath.Join(keep, "inspector.png"), full, 0o644)
		os.WriteFile(filepath.Join(keep, "inspector-390.png"), phone, 0o644)
	}

	time.Sleep(100 * time.Millisecond)
	if errs := log.errors(); len(errs) > 0 {
		t.Errorf("browser console errors:\n%s", strings.Join(errs, "\n"))
	}
}
