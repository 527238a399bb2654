package tooltest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/tool"
)

// Opener makes the host a case runs on: one that loads only the tool folder, whose tools
// receive exactly env as their declared variables' values, and whose log goes to log (the
// runner reads refusals there). The caller closes it.
type Opener func(ctx context.Context, env map[string]string, log slog.Handler) (*host.Host, error)

// Outcome is what came of one case.
type Outcome struct {
	Case     string   `json:"case"`
	File     string   `json:"file"`
	Passed   bool     `json:"passed"`
	Problems []string `json:"problems,omitempty"` // each difference, naming what differs
	// Updated names the snapshot --update wrote.
	Updated string      `json:"updated,omitempty"`
	Result  tool.Result `json:"result"`
}

// Options tune Run.
type Options struct {
	// Update rewrites the golden visualization snapshots instead of comparing them.
	Update bool
	// Match, when not empty, runs only the cases whose name contains it.
	Match string
}

// Run runs the cases of the tool folder dir, each on a host of its own.
func Run(ctx context.Context, dir string, cases []Case, open Opener, opts Options) []Outcome {
	var out []Outcome
	for _, c := range cases {
		if opts.Match != "" && !strings.Contains(c.Name, opts.Match) {
			continue
		}
		out = append(out, runCase(ctx, dir, c, open, opts))
	}
	return out
}

// observed is what the runner saw of a call besides its outcome.
type observed struct {
	outcome   host.Outcome
	workspace string
	asks      []tool.Ask
	ledger    []tool.Change
	refused   []string
	llmCalls  int
	llmErrs   []string
}

func runCase(ctx context.Context, dir string, c Case, open Opener, opts Options) Outcome {
	res := Outcome{Case: c.Name, File: c.File()}
	fail := func(format string, args ...any) Outcome {
		res.Problems = append(res.Problems, fmt.Sprintf(format, args...))
		return res
	}
	ws, err := os.MkdirTemp("", "jean2-test-ws-")
	if err != nil {
		return fail("make the workspace: %v", err)
	}
	defer os.RemoveAll(ws)
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		ws = real
	}
	if err := fillWorkspace(dir, ws, c.Workspace); err != nil {
		return fail("workspace: %v", err)
	}
	var asker tool.Asker = ask.Refuse{}
	if len(c.Answers) > 0 {
		a, err := ask.ParseAnswers(c.File()+" answers", c.Answers)
		if err != nil {
			return fail("answers: %v", err)
		}
		asker = a
	}
	rec := &recordingAsker{inner: asker}
	logs := &refusalLog{}
	h, err := open(ctx, c.Env, logs)
	if err != nil {
		return fail("start the host: %v", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10e9)
		defer cancel()
		_ = h.Close(cctx)
	}()
	name := c.Tool
	if name == "" {
		for _, e := range h.Tools() {
			if e.Folder != "" {
				name = e.Name
				if e.Status != host.StatusOK {
					return fail("the tool does not load: %s", e.Error)
				}
			}
		}
		if name == "" {
			return fail("the folder holds no tool")
		}
	}
	stub := &stubLLM{replies: c.LLM}
	ledger := tool.NewLedger()
	o := h.Invoke(ctx, host.Call{
		Tool: name, Args: c.Input, SessionID: "test", Workspace: host.Workspace{ID: "test", Path: ws},
		Asker: rec, Ledger: ledger, LLM: stub,
	})
	obs := observed{outcome: o, workspace: ws, asks: rec.all(), ledger: ledger.Changes(), llmCalls: stub.calls(), llmErrs: stub.errors()}
	obs.refused = append(obs.refused, logs.all()...)
	for _, ch := range obs.ledger {
		if !ch.OK && !ch.Disk && ch.Error != "" {
			obs.refused = append(obs.refused, ch.Op+" "+relTo(ws, ch.Path)+": "+ch.Error)
		}
	}
	res.Result = normalizeResult(o.Result, ws)
	res.Problems, res.Updated = check(dir, c, obs, res.Result, opts)
	res.Passed = len(res.Problems) == 0
	return res
}

// fillWorkspace copies the fixture folder (relative to the tool folder, inside it) and
// writes the inline files.
func fillWorkspace(toolDir, ws string, w Workspace) error {
	if w.From != "" {
		src := filepath.Join(toolDir, filepath.FromSlash(w.From))
		real, err := filepath.EvalSymlinks(src)
		if err != nil {
			return fmt.Errorf("from %q: %v", w.From, err)
		}
		realTool, _ := filepath.EvalSymlinks(toolDir)
		if !policy.Within(real, realTool) {
			return fmt.Errorf("from %q lies outside the tool folder", w.From)
		}
		if err := copyTree(real, ws); err != nil {
			return fmt.Errorf("from %q: %v", w.From, err)
		}
	}
	for p, content := range w.Files {
		full := filepath.Join(ws, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// copyTree copies regular files and folders; links and special files are left out, so a
// fixture cannot point the workspace elsewhere.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, data, 0o644)
		}
		return nil
	})
}

// normalizeResult writes the workspace path as $WORKSPACE, so results and snapshots do
// not depend on where the case ran.
func normalizeResult(r tool.Result, ws string) tool.Result {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return r
	}
	raw := bytes.TrimSpace(buf.Bytes())
	quoted, _ := json.Marshal(ws)
	inner := quoted[1 : len(quoted)-1]
	raw = bytes.ReplaceAll(raw, inner, []byte("$WORKSPACE"))
	var out tool.Result
	if json.Unmarshal(raw, &out) != nil {
		return r
	}
	return out
}

func relTo(ws, p string) string {
	if rel, err := filepath.Rel(ws, p); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return p
}

// recordingAsker keeps every ask the tool made and passes it on.
type recordingAsker struct {
	inner tool.Asker
	mu    sync.Mutex
	asks  []tool.Ask
}

func (r *recordingAsker) note(a tool.Ask) {
	r.mu.Lock()
	r.asks = append(r.asks, a)
	r.mu.Unlock()
}

func (r *recordingAsker) Ask(ctx context.Context, a tool.Ask) (json.RawMessage, error) {
	r.note(a)
	return r.inner.Ask(ctx, a)
}

// AskPermission keeps the answerer's own reading of permission answers (durations).
func (r *recordingAsker) AskPermission(ctx context.Context, a tool.Ask) (ask.Decision, error) {
	r.note(a)
	if pa, ok := r.inner.(ask.PermissionAsker); ok {
		return pa.AskPermission(ctx, a)
	}
	raw, err := r.inner.Ask(ctx, a)
	if err != nil {
		return ask.Decision{}, err
	}
	var granted bool
	if json.Unmarshal(raw, &granted) != nil {
		return ask.Decision{}, fmt.Errorf("permission answer %s is not true or false", raw)
	}
	return ask.Decision{Granted: granted, Duration: tool.DurationOnce}, nil
}

func (r *recordingAsker) all() []tool.Ask {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]tool.Ask(nil), r.asks...)
}

// stubLLM answers ctx.llm from the case's scripted replies, in order.
type stubLLM struct {
	mu      sync.Mutex
	replies []LLMReply
	next    int
	errs    []string
}

func (s *stubLLM) take(kind, prompt string) (LLMReply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next >= len(s.replies) {
		err := fmt.Errorf("the test's stub model has no reply left for call %d (%s): add one to \"llm\"", s.next+1, kind)
		s.next++
		s.errs = append(s.errs, err.Error())
		return LLMReply{}, err
	}
	r := s.replies[s.next]
	s.next++
	if r.Prompt != "" && !strings.Contains(prompt, r.Prompt) {
		s.errs = append(s.errs, fmt.Sprintf("model call %d: the prompt lacks %q; it was %q", s.next, r.Prompt, clip(prompt, 300)))
	}
	if r.Error != "" {
		return LLMReply{}, errors.New(r.Error)
	}
	return r, nil
}

func (s *stubLLM) GenerateText(_ context.Context, req tool.TextRequest) (string, error) {
	r, err := s.take("generateText", req.Prompt)
	if err != nil {
		return "", err
	}
	if r.Text == nil {
		s.mu.Lock()
		s.errs = append(s.errs, fmt.Sprintf("model call %d is generateText but its scripted reply is json", s.next))
		s.mu.Unlock()
		return string(r.JSON), nil
	}
	return *r.Text, nil
}

func (s *stubLLM) GenerateStructured(_ context.Context, req tool.StructuredRequest) (json.RawMessage, error) {
	r, err := s.take("generateStructured", req.Prompt)
	if err != nil {
		return nil, err
	}
	if r.JSON == nil {
		s.mu.Lock()
		s.errs = append(s.errs, fmt.Sprintf("model call %d is generateStructured but its scripted reply is text", s.next))
		s.mu.Unlock()
		return json.Marshal(*r.Text)
	}
	if len(req.Schema) > 0 {
		if sch, err := tool.CompileSchema(req.Schema); err == nil {
			if err := sch.Validate(r.JSON); err != nil {
				s.mu.Lock()
				s.errs = append(s.errs, fmt.Sprintf("model call %d: the scripted json does not match the tool's schema: %v", s.next, err))
				s.mu.Unlock()
			}
		}
	}
	return r.JSON, nil
}

func (s *stubLLM) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

func (s *stubLLM) errors() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.errs...)
}

// refusalLog is the host's log as the runner reads it: it keeps the refusals (the egress
// proxy's, and the worker's notes of what the sandbox refused the tool's own code).
type refusalLog struct {
	mu    sync.Mutex
	lines []string
	attrs []slog.Attr
}

func (l *refusalLog) Enabled(context.Context, slog.Level) bool { return true }

func (l *refusalLog) Handle(_ context.Context, r slog.Record) error {
	var text string
	attrs := map[string]string{}
	for _, a := range l.attrs {
		attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
	switch {
	case r.Message == "network access refused":
		text = fmt.Sprintf("network access to %s refused: %s", attrs["target"], attrs["reason"])
	case strings.Contains(r.Message, "jean2 sandbox refused: "):
		_, text, _ = strings.Cut(r.Message, "jean2 sandbox refused: ")
	case strings.Contains(attrs["line"], "jean2 sandbox refused: "):
		_, text, _ = strings.Cut(attrs["line"], "jean2 sandbox refused: ")
	default:
		return nil
	}
	l.mu.Lock()
	l.lines = append(l.lines, text)
	l.mu.Unlock()
	return nil
}

func (l *refusalLog) WithAttrs(as []slog.Attr) slog.Handler {
	return &refusalChild{parent: l, attrs: as}
}
func (l *refusalLog) WithGroup(string) slog.Handler { return l }

func (l *refusalLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

type refusalChild struct {
	parent *refusalLog
	attrs  []slog.Attr
}

func (c *refusalChild) Enabled(context.Context, slog.Level) bool { return true }
func (c *refusalChild) Handle(ctx context.Context, r slog.Record) error {
	r.AddAttrs(c.attrs...)
	return c.parent.Handle(ctx, r)
}
func (c *refusalChild) WithAttrs(as []slog.Attr) slog.Handler {
	return &refusalChild{parent: c.parent, attrs: append(append([]slog.Attr(nil), c.attrs...), as...)}
}
func (c *refusalChild) WithGroup(string) slog.Handler { return c }

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
