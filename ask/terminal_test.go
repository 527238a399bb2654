package ask

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/jean2/jean2/tool"
)

// screen collects what the terminal shows (the program's output and the tty's echo of what
// was typed) and lets a test wait for text to appear.
type screen struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	seen    int // how far waitFor has consumed
	changed chan struct{}
}

func (s *screen) collect(r io.Reader) {
	b := make([]byte, 4096)
	for {
		n, err := r.Read(b)
		s.mu.Lock()
		s.buf.Write(b[:n])
		close(s.changed)
		s.changed = make(chan struct{})
		s.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// waitFor waits until text appears after what earlier waits consumed, and consumes up to it.
func (s *screen) waitFor(t *testing.T, text string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		s.mu.Lock()
		rest := s.buf.String()[s.seen:]
		ch := s.changed
		if i := strings.Index(rest, text); i >= 0 {
			s.seen += i + len(text)
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("screen never showed %q; it shows:\n%s", text, rest)
		}
	}
}

func (s *screen) all() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

type ptyTerm struct {
	term   *Terminal
	screen *screen
	ptm    *os.File
	lines  chan struct{} // one token per line the terminal's reader received
}

// newPTYTerminal wires a Terminal to the slave side of a real pty; the test types on the
// master side, as a person at a terminal would.
func newPTYTerminal(t *testing.T) *ptyTerm {
	t.Helper()
	ptm, pts, err := pty.Open()
	if err != nil {
		t.Skipf("no pty available: %v", err)
	}
	p := &ptyTerm{
		term:   NewTerminal(pts, pts, nil),
		screen: &screen{changed: make(chan struct{})},
		ptm:    ptm,
		lines:  make(chan struct{}, 100),
	}
	p.term.lineRead = func() { p.lines <- struct{}{} }
	done := make(chan struct{})
	go func() { defer close(done); p.screen.collect(ptm) }()
	t.Cleanup(func() {
		p.term.Close()
		pts.Close()
		ptm.Close()
		<-done
	})
	return p
}

func (p *ptyTerm) typeLine(t *testing.T, s string) {
	t.Helper()
	if _, err := p.ptm.WriteString(s + "\r"); err != nil { // Enter sends CR; the tty makes it NL
		t.Fatal(err)
	}
}

type askResult struct {
	v   json.RawMessage
	d   Decision
	err error
}

func (p *ptyTerm) ask(ctx context.Context, a tool.Ask) chan askResult {
	ch := make(chan askResult, 1)
	go func() {
		v, err := p.term.Ask(ctx, a)
		ch <- askResult{v: v, err: err}
	}()
	return ch
}

func (p *ptyTerm) askPermission(ctx context.Context, a tool.Ask) chan askResult {
	ch := make(chan askResult, 1)
	go func() {
		d, err := p.term.AskPermission(ctx, a)
		ch <- askResult{d: d, err: err}
	}()
	return ch
}

func wait(t *testing.T, ch chan askResult) askResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("ask did not return")
		return askResult{}
	}
}

func intp(n int) *int { return &n }

func TestTerminalPermission(t *testing.T) {
	p := newPTYTerminal(t)
	ctx := ContextWithCall(context.Background(), Call{Tool: "word_count"})
	a := tool.Ask{
		Type: tool.AskPermission, Question: "Read file outside workspace: /tmp/x.txt?",
		Description: "Counting words.", Risk: "low", Resource: "file",
		Paths: []string{"/tmp/x.txt"}, Patterns: []string{"file:/tmp/x.txt"}, Duration: tool.DurationWorkspace,
	}
	res := p.askPermission(ctx, a)
	for _, want := range []string{"[tool word_count asks]", "Permission requested: Read file outside workspace: /tmp/x.txt?",
		"Counting words.", "Risk: low", "Resource: file", "Paths: /tmp/x.txt", "Patterns: file:/tmp/x.txt",
		"1) allow once", "2) allow for session", "3) allow for workspace   (default)", "4) deny", "Choose 1-4 (y/n) [3]: "} {
		p.screen.waitFor(t, want)
	}
	p.typeLine(t, "maybe")
	p.screen.waitFor(t, `"maybe" is not a choice: type 1, 2, 3 or 4`)
	p.screen.waitFor(t, "Choose 1-4 (y/n) [3]: ")
	p.typeLine(t, "")
	r := wait(t, res)
	if r.err != nil || r.d != (Decision{Granted: true, Duration: tool.DurationWorkspace}) {
		t.Fatalf("default choice = %+v, %v", r.d, r.err)
	}

	for line, want := range map[string]Decision{
		"2":    {Granted: true, Duration: tool.DurationSession},
		"once": {Granted: true, Duration: tool.DurationOnce},
		"4":    {},
		"y":    {Granted: true, Duration: tool.DurationOnce}, // y/n: the narrowest grant
		"Yes":  {Granted: true, Duration: tool.DurationOnce},
		"n":    {},
	} {
		res = p.askPermission(ctx, a)
		p.screen.waitFor(t, "Choose 1-4 (y/n) [3]: ")
		p.typeLine(t, line)
		if r := wait(t, res); r.err != nil || r.d != want {
			t.Fatalf("%q = %+v, %v; want %+v", line, r.d, r.err, want)
		}
	}

	// Ask reports the boolean only; with no suggested duration, an empty line is no answer.
	a.Duration = ""
	res = p.ask(ctx, a)
	p.screen.waitFor(t, "Choose 1-4 (y/n): ")
	p.typeLine(t, "")
	p.screen.waitFor(t, "Please choose")
	p.typeLine(t, "deny")
	if r := wait(t, res); r.err != nil || string(r.v) != "false" {
		t.Fatalf("Ask = %s, %v", r.v, r.err)
	}
}

func TestTerminalSingleSelect(t *testing.T) {
	p := newPTYTerminal(t)
	a := tool.Ask{Type: tool.AskSingleSelect, Target: "human", Question: "Which environment?", Options: []tool.Option{
		{Label: "Production", Value: json.RawMessage(`"prod"`), Description: "live traffic"},
		{Label: "Staging", Value: json.RawMessage(`"staging"`)},
		{Label: "Count", Value: json.RawMessage(`{"n": 3}`)},
	}}
	res := p.ask(context.Background(), a)
	for _, want := range []string{"Which environment?", "1) Production — live traffic", "2) Staging", "3) Count", "Choose one (1-3 or a label): "} {
		p.screen.waitFor(t, want)
	}
	p.typeLine(t, "9")
	p.screen.waitFor(t, `"9" is not an option: type a number from 1 to 3`)
	p.typeLine(t, "staging")
	if r := wait(t, res); r.err != nil || string(r.v) != `"staging"` {
		t.Fatalf("by label = %s, %v", r.v, r.err)
	}
	res = p.ask(context.Background(), a)
	p.screen.waitFor(t, "Choose one")
	p.typeLine(t, "3")
	if r := wait(t, res); r.err != nil || string(r.v) != `{"n":3}` {
		t.Fatalf("by number = %s, %v", r.v, r.err)
	}
	a.DefaultValue = json.RawMessage(`"prod"`)
	res = p.ask(context.Background(), a)
	p.screen.waitFor(t, "Choose one (1-3 or a label) [1]: ")
	p.typeLine(t, "")
	if r := wait(t, res); r.err != nil || string(r.v) != `"prod"` {
		t.Fatalf("default = %s, %v", r.v, r.err)
	}
}

func TestTerminalMultiSelect(t *testing.T) {
	p := newPTYTerminal(t)
	a := tool.Ask{Type: tool.AskMultiSelect, Question: "Which checks?", Min: intp(1), Max: intp(2), Options: []tool.Option{
		{Label: "lint", Value: json.RawMessage(`"lint"`)},
		{Label: "test", Value: json.RawMessage(`"test"`)},
		{Label: "vet", Value: json.RawMessage(`"vet"`)},
	}}
	res := p.ask(context.Background(), a)
	p.screen.waitFor(t, "Choose numbers or labels separated by commas (choose 1 to 2): ")
	p.typeLine(t, "")
	p.screen.waitFor(t, "You chose 0; choose 1 to 2")
	p.typeLine(t, "1,2,3")
	p.screen.waitFor(t, "You chose 3; choose 1 to 2")
	p.typeLine(t, "1, nope")
	p.screen.waitFor(t, `"nope" is not an option`)
	p.typeLine(t, "3, LINT, 3")
	if r := wait(t, res); r.err != nil || string(r.v) != `["vet","lint"]` {
		t.Fatalf("answer = %s, %v", r.v, r.err)
	}
	// No minimum: an empty line chooses nothing.
	a.Min, a.Max = nil, nil
	res = p.ask(context.Background(), a)
	p.screen.waitFor(t, "(choose at most 3): ")
	p.typeLine(t, "")
	if r := wait(t, res); r.err != nil || string(r.v) != `[]` {
		t.Fatalf("empty = %s, %v", r.v, r.err)
	}
}

func TestTerminalTextConfirmAndForm(t *testing.T) {
	p := newPTYTerminal(t)
	text := tool.Ask{Type: tool.AskText, Question: "Branch name?", Placeholder: "main", DefaultValue: json.RawMessage(`"develop"`)}
	res := p.ask(context.Background(), text)
	p.screen.waitFor(t, "Branch name?")
	p.screen.waitFor(t, "Answer (e.g. main) [develop]: ")
	p.typeLine(t, "")
	if r := wait(t, res); r.err != nil || string(r.v) != `"develop"` {
		t.Fatalf("text default = %s, %v", r.v, r.err)
	}
	res = p.ask(context.Background(), text)
	p.screen.waitFor(t, "[develop]: ")
	p.typeLine(t, "feature/ask")
	if r := wait(t, res); r.err != nil || string(r.v) != `"feature/ask"` {
		t.Fatalf("text typed = %s, %v", r.v, r.err)
	}

	confirm := tool.Ask{Type: tool.AskConfirm, Question: "Delete all temporary files?", DefaultValue: json.RawMessage(`false`)}
	res = p.ask(context.Background(), confirm)
	p.screen.waitFor(t, "Delete all temporary files? [y/N]: ")
	p.typeLine(t, "perhaps")
	p.screen.waitFor(t, "Please answer y or n.")
	p.typeLine(t, "")
	if r := wait(t, res); r.err != nil || string(r.v) != `false` {
		t.Fatalf("confirm default = %s, %v", r.v, r.err)
	}
	confirm.DefaultValue = json.RawMessage(`true`)
	res = p.ask(context.Background(), confirm)
	p.screen.waitFor(t, "[Y/n]: ")
	p.typeLine(t, "")
	if r := wait(t, res); r.err != nil || string(r.v) != `true` {
		t.Fatalf("confirm default true = %s, %v", r.v, r.err)
	}

	form := tool.Ask{Type: tool.AskForm, Target: "human", Question: "Deployment configuration", Questions: []tool.Ask{
		{Type: tool.AskText, Question: "Environment?", Placeholder: "production"},
		{Type: tool.AskConfirm, Question: "Run migrations?", DefaultValue: json.RawMessage(`true`)},
	}}
	res = p.ask(context.Background(), form)
	p.screen.waitFor(t, "Form: Deployment configuration")
	p.screen.waitFor(t, "(1/2) Environment?")
	p.screen.waitFor(t, "Answer (e.g. production): ")
	p.typeLine(t, "staging")
	p.screen.waitFor(t, "(2/2) Run migrations? [Y/n]: ")
	p.typeLine(t, "n")
	r := wait(t, res)
	if r.err != nil {
		t.Fatal(r.err)
	}
	want := `{"type":"form","answers":[{"question":"Environment?","answer":"staging"},{"question":"Run migrations?","answer":false}]}`
	if string(r.v) != want {
		t.Fatalf("form = %s\nwant  %s", r.v, want)
	}
}

// A number ask reads a number in its range, says what is wrong with another, and takes
// its default on an empty line.
func TestTerminalNumber(t *testing.T) {
	p := newPTYTerminal(t)
	lo, hi := 1.0, 10.0
	n := tool.Ask{Type: tool.AskNumber, Question: "How many?", Integer: true, Minimum: &lo, Maximum: &hi, DefaultValue: json.RawMessage(`3`)}
	res := p.ask(context.Background(), n)
	p.screen.waitFor(t, "Answer (a whole number from 1 to 10) [3]: ")
	p.typeLine(t, "2.5")
	p.screen.waitFor(t, `"2.5" is not a whole number from 1 to 10.`)
	p.typeLine(t, "7")
	if r := wait(t, res); r.err != nil || string(r.v) != `7` {
		t.Fatalf("number typed = %s, %v", r.v, r.err)
	}
	res = p.ask(context.Background(), n)
	p.screen.waitFor(t, "[3]: ")
	p.typeLine(t, "")
	if r := wait(t, res); r.err != nil || string(r.v) != `3` {
		t.Fatalf("number default = %s, %v", r.v, r.err)
	}
}

func TestTerminalEOF(t *testing.T) {
	p := newPTYTerminal(t)
	a := tool.Ask{Type: tool.AskText, Question: "Name?"}
	res := p.ask(context.Background(), a)
	p.screen.waitFor(t, "Answer: ")
	if _, err := p.ptm.Write([]byte{4}); err != nil { // Ctrl-D at the start of a line
		t.Fatal(err)
	}
	r := wait(t, res)
	if !errors.Is(r.err, ErrInputClosed) || !strings.Contains(r.err.Error(), "closed the input") {
		t.Fatalf("error = %v, want ErrInputClosed", r.err)
	}
	// The input stays closed for later asks.
	r = wait(t, p.ask(context.Background(), a))
	if !errors.Is(r.err, ErrInputClosed) {
		t.Fatalf("second ask error = %v", r.err)
	}
}

func TestTerminalCancelWhileWaiting(t *testing.T) {
	p := newPTYTerminal(t)
	ctx, cancel := context.WithCancel(context.Background())
	res := p.ask(ctx, tool.Ask{Type: tool.AskText, Question: "First?"})
	p.screen.waitFor(t, "First?")
	p.screen.waitFor(t, "Answer: ")
	cancel()
	r := wait(t, res)
	if !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled ask error = %v", r.err)
	}
	p.screen.waitFor(t, "(question withdrawn")

	// A line typed after the withdrawal but before the next question is shown must not
	// answer that question; the next line typed after it does.
	p.typeLine(t, "late answer")
	<-p.lines
	res = p.ask(context.Background(), tool.Ask{Type: tool.AskText, Question: "Second?"})
	p.screen.waitFor(t, "Second?")
	p.screen.waitFor(t, "(ignored a line typed before this question was shown)")
	p.typeLine(t, "fresh")
	if r := wait(t, res); r.err != nil || string(r.v) != `"fresh"` {
		t.Fatalf("next ask = %s, %v", r.v, r.err)
	}
	<-p.lines

	// With nothing pending, the next ask simply takes the next line.
	res = p.ask(context.Background(), tool.Ask{Type: tool.AskText, Question: "Third?"})
	p.screen.waitFor(t, "Third?")
	p.screen.waitFor(t, "Answer: ")
	p.typeLine(t, "third")
	if r := wait(t, res); r.err != nil || string(r.v) != `"third"` {
		t.Fatalf("third ask = %s, %v", r.v, r.err)
	}
}

func TestTerminalSerializesAsks(t *testing.T) {
	p := newPTYTerminal(t)
	first := p.ask(context.Background(), tool.Ask{Type: tool.AskText, Question: "First question?"})
	p.screen.waitFor(t, "First question?")
	p.screen.waitFor(t, "Answer: ")

	// A second ask waits for its turn and can be withdrawn while waiting.
	ctx, cancel := context.WithCancel(context.Background())
	queued := p.ask(ctx, tool.Ask{Type: tool.AskText, Question: "Withdrawn question?"})
	second := p.ask(context.Background(), tool.Ask{Type: tool.AskText, Question: "Second question?"})
	cancel()
	if r := wait(t, queued); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("queued ask error = %v", r.err)
	}
	p.typeLine(t, "one")
	if r := wait(t, first); r.err != nil || string(r.v) != `"one"` {
		t.Fatalf("first = %s, %v", r.v, r.err)
	}
	p.screen.waitFor(t, "Second question?")
	p.screen.waitFor(t, "Answer: ")
	p.typeLine(t, "two")
	if r := wait(t, second); r.err != nil || string(r.v) != `"two"` {
		t.Fatalf("second = %s, %v", r.v, r.err)
	}
	if strings.Contains(p.screen.all(), "Withdrawn question?") {
		t.Fatal("a withdrawn ask that never had its turn was shown")
	}
}

func TestTerminalNeutralizesEscapes(t *testing.T) {
	p := newPTYTerminal(t)
	res := p.ask(context.Background(), tool.Ask{Type: tool.AskConfirm, Question: "Safe?\x1b[2J\x1b[1A\rDelete everything?"})
	p.screen.waitFor(t, `Safe?\u001b[2J\u001b[1A\u000dDelete everything? [y/n]: `)
	p.typeLine(t, "n")
	if r := wait(t, res); r.err != nil || string(r.v) != "false" {
		t.Fatalf("= %s, %v", r.v, r.err)
	}
}

func TestTerminalRejectsWhatItCannotAnswer(t *testing.T) {
	term := NewTerminal(strings.NewReader(""), io.Discard, nil)
	if _, err := term.Ask(context.Background(), tool.Ask{Type: tool.AskClientCapability, Capability: "clipboard"}); err == nil || !strings.Contains(err.Error(), "only a connected client") {
		t.Fatalf("client_capability error = %v", err)
	}
	if _, err := term.Ask(context.Background(), tool.Ask{Type: tool.AskSingleSelect, Question: "Pick?"}); !strings.Contains(errString(err), "has no options") {
		t.Fatalf("invalid ask error = %v", err)
	}
	term.Close()
	if _, err := term.Ask(context.Background(), tool.Ask{Type: tool.AskText, Question: "Name?"}); !errors.Is(err, ErrTerminalClosed) {
		t.Fatalf("closed terminal error = %v", err)
	}
}

func TestTerminalPipedInputAndLongLines(t *testing.T) {
	// A pipe instead of a terminal: answers typed ahead are used in order, a partial last
	// line counts, and an over-long line is refused.
	in := strings.NewReader(strings.Repeat("x", 100) + "\nshort\nlast")
	var out bytes.Buffer
	term := NewTerminal(in, &out, &TerminalOptions{MaxLineBytes: 50})
	defer term.Close()
	v, err := term.Ask(context.Background(), tool.Ask{Type: tool.AskText, Question: "One?"})
	if err != nil || string(v) != `"short"` {
		t.Fatalf("one = %s, %v", v, err)
	}
	if !strings.Contains(out.String(), "longer than 50 bytes") {
		t.Fatalf("no long-line message in %q", out.String())
	}
	v, err = term.Ask(context.Background(), tool.Ask{Type: tool.AskText, Question: "Two?"})
	if err != nil || string(v) != `"last"` {
		t.Fatalf("two = %s, %v", v, err)
	}
	if _, err := term.Ask(context.Background(), tool.Ask{Type: tool.AskText, Question: "Three?"}); !errors.Is(err, ErrInputClosed) {
		t.Fatalf("three error = %v", err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// An empty line (a reflexive Enter) takes the grant the tool suggests only for a low-risk
// ask; anything riskier, or with the risk unstated, is allowed once: a write outside the
// workspace (high risk, suggesting the workspace) never defaults to a lasting grant.
func TestTerminalPermissionDefaultIsNarrowUnlessLowRisk(t *testing.T) {
	for _, c := range []struct {
		risk, suggested, want string
	}{
		{"low", tool.DurationWorkspace, tool.DurationWorkspace},
		{"medium", tool.DurationSession, tool.DurationOnce},
		{"high", tool.DurationWorkspace, tool.DurationOnce},
		{"critical", tool.DurationSession, tool.DurationOnce},
		{"", tool.DurationSession, tool.DurationOnce},
	} {
		var out bytes.Buffer
		term := NewTerminal(strings.NewReader("\n"), &out, nil)
		d, err := term.AskPermission(context.Background(), tool.Ask{Type: tool.AskPermission,
			Question: "Write /tmp/x/outside.txt?", Risk: c.risk, Duration: c.suggested})
		term.Close()
		if err != nil || !d.Granted || d.Duration != c.want {
			t.Errorf("risk %q suggesting %s: an empty line gave %+v, %v; want allowed %s", c.risk, c.suggested, d, err, c.want)
		}
		wantMark := map[string]string{tool.DurationOnce: "1) allow once   (default)", tool.DurationSession: "2) allow for session   (default)", tool.DurationWorkspace: "3) allow for workspace   (default)"}[c.want]
		if !strings.Contains(out.String(), wantMark) {
			t.Errorf("risk %q: the prompt does not mark %q:\n%s", c.risk, wantMark, out.String())
		}
	}
}
