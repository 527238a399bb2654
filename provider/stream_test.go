package provider_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/provider/providertest"
)

const testKey = "sk-test-0123456789"

// retries records the retries a provider made.
type retries struct {
	mu    sync.Mutex
	waits []time.Duration
	errs  []error
}

func (r *retries) hook(_ int, wait time.Duration, err error) {
	r.mu.Lock()
	r.waits, r.errs = append(r.waits, wait), append(r.errs, err)
	r.mu.Unlock()
}

func (r *retries) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.waits)
}

// flavor is one of the two wire formats, with what a test needs to drive it.
type flavor struct {
	name string
	srv  func(testing.TB) *providertest.Server
	kind provider.Kind

	text       func(pieces ...string) providertest.Reply
	toolCall3  providertest.Reply // one call, arguments in 3 pieces
	parallel   providertest.Reply // text, then two calls
	length     providertest.Reply // cut off at the token limit
	errorAfter providertest.Reply // text, then an error event of a retryable type
	errorFirst providertest.Reply // an error event before any content
	dropAfter  providertest.Reply // text, then the connection is cut
	httpError  func(status int, typ, msg string) providertest.Reply
}

func flavors() []flavor {
	return []flavor{
		{
			name: "openai", srv: providertest.NewOpenAI, kind: provider.KindOpenAI,
			text: func(p ...string) providertest.Reply { return providertest.OpenAIText("gpt-test", p...) },
			toolCall3: providertest.NewOpenAIStream("gpt-test").ToolCall(0, "call_abc", "read_file", "").
				ToolArgs(0, `{"pa`).ToolArgs(0, `th": "notes/a`).ToolArgs(0, `.txt"}`).
				Finish("tool_calls").Usage(40, 17).Done().Reply(),
			parallel: providertest.NewOpenAIStream("gpt-test").Text("Checking both.").
				ToolCall(0, "call_1", "read_file", "").ToolCall(1, "call_2", "list_dir", "").
				ToolArgs(1, `{"path":`).ToolArgs(0, `{"path":"a.txt"}`).ToolArgs(1, `"src"}`).
				Finish("tool_calls").Usage(50, 30).Done().Reply(),
			length:     providertest.NewOpenAIStream("gpt-test").Text("Once upon a ").Text("time").Finish("length").Usage(5, 2).Done().Reply(),
			errorAfter: providertest.NewOpenAIStream("gpt-test").Text("Partial ").Error("server_error", "The server had an error while processing your request.").Reply(),
			errorFirst: providertest.NewOpenAIStream("gpt-test").Error("server_error", "The server is overloaded.").Reply(),
			dropAfter:  providertest.NewOpenAIStream("gpt-test").Text("Half an ans").Drop().Reply(),
			httpError:  providertest.OpenAIError,
		},
		{
			name: "anthropic", srv: providertest.NewAnthropic, kind: provider.KindAnthropic,
			text: func(p ...string) providertest.Reply { return providertest.AnthropicText("claude-test", p...) },
			toolCall3: providertest.NewAnthropicStream("claude-test", 40).
				ToolUse("toolu_01abc", "read_file", "", `{"pa`, `th": "notes/a`, `.txt"}`).Stop("tool_use", 17).Reply(),
			parallel: providertest.NewAnthropicStream("claude-test", 50).Text("Checking both.").
				ToolUse("toolu_1", "read_file", `{"path":"a.txt"}`).ToolUse("toolu_2", "list_dir", `{"path":`, `"src"}`).
				Stop("tool_use", 30).Reply(),
			length: providertest.NewAnthropicStream("claude-test", 5).Text("Once upon a ", "time").Stop("max_tokens", 2).Reply(),
			errorAfter: providertest.NewAnthropicStream("claude-test", 5).BeginText().TextDelta("Partial ").
				Error("overloaded_error", "Overloaded").Reply(),
			errorFirst: providertest.NewAnthropicStream("claude-test", 5).Error("overloaded_error", "Overloaded").Reply(),
			dropAfter:  providertest.NewAnthropicStream("claude-test", 5).BeginText().TextDelta("Half an ans").Drop().Reply(),
			httpError:  providertest.AnthropicError,
		},
	}
}

func (f flavor) model() string {
	if f.kind == provider.KindOpenAI {
		return "gpt-test"
	}
	return "claude-test"
}

// start makes a fake server of the flavor that wants testKey, and a provider pointed at it
// with fast retries recorded in r.
func (f flavor) start(t *testing.T, r *retries) (*providertest.Server, provider.Provider) {
	t.Helper()
	srv := f.srv(t)
	srv.Key = testKey
	opts := &provider.Options{Retry: provider.Retry{BaseDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond}}
	if r != nil {
		opts.Retry.OnRetry = r.hook
	}
	p, err := provider.New(provider.Config{Name: "fake-" + f.name, Kind: f.kind, BaseURL: srv.BaseURL(), APIKey: testKey}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return srv, p
}

func ask(model string) provider.Request {
	return provider.Request{Model: model, System: "Be brief.", MaxTokens: 256,
		Messages: []provider.Message{{Role: provider.RoleUser, Text: "Hello?"}}}
}

// events reads a stream to its end and describes each event in one line.
func events(t *testing.T, s provider.Stream) ([]string, error) {
	t.Helper()
	defer s.Close()
	var out []string
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		switch ev.Kind {
		case provider.EventText, provider.EventReasoning:
			out = append(out, fmt.Sprintf("%s %q", ev.Kind, ev.Text))
		case provider.EventToolCallStart:
			out = append(out, fmt.Sprintf("start %d %s %s", ev.Index, ev.ID, ev.Name))
		case provider.EventToolCallArgs:
			out = append(out, fmt.Sprintf("args %d %s", ev.Index, ev.Text))
		case provider.EventUsage:
			out = append(out, fmt.Sprintf("usage %d/%d", ev.Usage.InputTokens, ev.Usage.OutputTokens))
		case provider.EventFinish:
			out = append(out, "finish "+string(ev.Finish))
		}
	}
}

func equalLines(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestStreamsText(t *testing.T) {
	for _, f := range flavors() {
		t.Run(f.name, func(t *testing.T) {
			srv, p := f.start(t, nil)
			srv.Push(f.text("Hel", "lo, ", "world ✓"))
			s, err := p.Stream(context.Background(), ask(f.model()))
			if err != nil {
				t.Fatal(err)
			}
			got, err := events(t, s)
			if err != nil {
				t.Fatal(err)
			}
			equalLines(t, got, []string{`text "Hel"`, `text "lo, "`, `text "world ✓"`, "usage 10/3", "finish stop"})
			if ev, err := s.Next(); !errors.Is(err, io.EOF) {
				t.Fatalf("Next after the end = %+v, %v; want io.EOF", ev, err)
			}
		})
	}
}

func TestStreamsToolCallArgumentsInPieces(t *testing.T) {
	for _, f := range flavors() {
		t.Run(f.name, func(t *testing.T) {
			srv, p := f.start(t, nil)
			srv.Push(f.toolCall3)
			s, err := p.Stream(context.Background(), ask(f.model()))
			if err != nil {
				t.Fatal(err)
			}
			got, err := events(t, s)
			if err != nil {
				t.Fatal(err)
			}
			id := map[string]string{"openai": "call_abc", "anthropic": "toolu_01abc"}[f.name]
			equalLines(t, got, []string{"start 0 " + id + " read_file", `args 0 {"pa`, `args 0 th": "notes/a`, `args 0 .txt"}`,
				"usage 40/17", "finish tool_calls"})

			srv.Push(f.toolCall3)
			s, err = p.Stream(context.Background(), ask(f.model()))
			if err != nil {
				t.Fatal(err)
			}
			r, err := provider.Collect(s)
			if err != nil || len(r.ToolCalls) != 1 || r.ToolCalls[0].Args != `{"path": "notes/a.txt"}` || r.Finish != provider.FinishToolCalls {
				t.Fatalf("Collect = %+v, %v", r, err)
			}
		})
	}
}

func TestStreamsParallelToolCalls(t *testing.T) {
	for _, f := range flavors() {
		t.Run(f.name, func(t *testing.T) {
			srv, p := f.start(t, nil)
			srv.Push(f.parallel)
			s, err := p.Stream(context.Background(), ask(f.model()))
			if err != nil {
				t.Fatal(err)
			}
			r, err := provider.Collect(s)
			if err != nil {
				t.Fatal(err)
			}
			if r.Text != "Checking both." || len(r.ToolCalls) != 2 || r.Finish != provider.FinishToolCalls || r.Usage.OutputTokens != 30 {
				t.Fatalf("response %+v", r)
			}
			c0, c1 := r.ToolCalls[0], r.ToolCalls[1]
			if c0.Name != "read_file" || c0.Args != `{"path":"a.txt"}` || c1.Name != "list_dir" || c1.Args != `{"path":"src"}` || c0.ID == c1.ID {
				t.Fatalf("calls %+v", r.ToolCalls)
			}
		})
	}
}

func TestStreamCutOffAtTheTokenLimit(t *testing.T) {
	for _, f := range flavors() {
		t.Run(f.name, func(t *testing.T) {
			srv, p := f.start(t, nil)
			srv.Push(f.length)
			s, err := p.Stream(context.Background(), ask(f.model()))
			if err != nil {
				t.Fatal(err)
			}
			r, err := provider.Collect(s)
			if err != nil || r.Text != "Once upon a time" || r.Finish != provider.FinishLength {
				t.Fatalf("Collect = %+v, %v; want the text and finish length", r, err)
			}
		})
	}
}

// TestErrorMidStreamIsNotRetried: output was delivered, so an error event of a type that
// would be retried before any output ends the stream with a partial error instead.
func TestErrorMidStreamIsNotRetried(t *testing.T) {
	for _, f := range flavors() {
		t.Run(f.name, func(t *testing.T) {
			var r retries
			srv, p := f.start(t, &r)
			srv.Push(f.errorAfter, f.text("never sent"))
			s, err := p.Stream(context.Background(), ask(f.model()))
			if err != nil {
				t.Fatal(err)
			}
			got, err := events(t, s)
			equalLines(t, got, []string{`text "Partial "`})
			var pe *provider.Error
			if !errors.As(err, &pe) || !pe.Partial || pe.Status != 0 {
				t.Fatalf("error = %#v, want a partial *provider.Error", err)
			}
			wantType := map[string]string{"openai": "server_error", "anthropic": "overloaded_error"}[f.name]
			if pe.Type != wantType || pe.Message == "" || !strings.Contains(err.Error(), "not retried") {
				t.Fatalf("error %q: type %q message %q", err, pe.Type, pe.Message)
			}
			if n := len(srv.Requests()); n != 1 || r.count() != 0 {
				t.Fatalf("%d requests, %d retries; an error after output must not be retried", n, r.count())
			}
		})
	}
}

func TestDroppedConnectionMidStreamIsNotRetried(t *testing.T) {
	for _, f := range flavors() {
		t.Run(f.name, func(t *testing.T) {
			var r retries
			srv, p := f.start(t, &r)
			srv.Push(f.dropAfter, f.text("never sent"))
			s, err := p.Stream(context.Background(), ask(f.model()))
			if err != nil {
				t.Fatal(err)
			}
			got, err := events(t, s)
			equalLines(t, got, []string{`text "Half an ans"`})
			var pe *provider.Error
			if !errors.As(err, &pe) || !pe.Partial || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("error = %v, want a partial error wrapping io.ErrUnexpectedEOF", err)
			}
			if n := len(srv.Requests()); n != 1 || r.count() != 0 {
				t.Fatalf("%d requests, %d retries after a drop mid-answer", n, r.count())
			}
		})
	}
}

// TestErrorBeforeOutputIsRetried: an error event or a dropped connection before any
// content reached the caller is retried like an HTTP error.
func TestErrorBeforeOutputIsRetried(t *testing.T) {
	for _, f := range flavors() {
		t.Run(f.name, func(t *testing.T) {
			var r retries
			srv, p := f.start(t, &r)
			drop := providertest.Reply{Steps: []providertest.Step{{Drop: true}}}
			srv.Push(f.errorFirst, drop, f.text("fine"))
			s, err := p.Stream(context.Background(), ask(f.model()))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := provider.Collect(s)
			if err != nil || resp.Text != "fine" {
				t.Fatalf("Collect = %+v, %v", resp, err)
			}
			if n := len(srv.Requests()); n != 3 || r.count() != 2 {
				t.Fatalf("%d requests and %d retries, want 3 and 2", n, r.count())
			}
		})
	}
}

func TestRateLimitThenSuccessIsRetried(t *testing.T) {
	for _, f := range flavors() {
		t.Run(f.name, func(t *testing.T) {
			var r retries
			srv, p := f.start(t, &r)
			srv.Push(f.httpError(429, "rate_limit_error", "Rate limit reached"), f.httpError(503, "api_error", "unavailable"), f.text("ok"))
			s, err := p.Stream(context.Background(), ask(f.model()))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := provider.Collect(s)
			if err != nil || resp.Text != "ok" {
				t.Fatalf("Collect = %+v, %v", resp, err)
			}
			if n := len(srv.Requests()); n != 3 || r.count() != 2 {
				t.Fatalf("%d requests, %d retries; want 3 and 2", n, r.count())
			}
			var pe *provider.Error
			if !errors.As(r.errs[0], &pe) || pe.Status != 429 || pe.Message != "Rate limit reached" {
				t.Fatalf("first retry's error %#v", r.errs[0])
			}
			for _, w := range r.waits {
				if w <= 0 || w > 4*time.Millisecond {
					t.Fatalf("backoff wait %v outside (0, MaxDelay]", w)
				}
			}
		})
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	for _, f := range flavors() {
		t.Run(f.name, func(t *testing.T) {
			var r retries
			srv, p := f.start(t, &r)
			srv.Push(f.httpError(429, "rate_limit_error", "slow down").WithHeader("Retry-After", "1"), f.text("ok"))
			start := time.Now()
			s, err := p.Stream(context.Background(), ask(f.model()))
			if err != nil {
				t.Fatal(err)
			}
			if resp, err := provider.Collect(s); err != nil || resp.Text != "ok" {
				t.Fatalf("Collect = %+v, %v", resp, err)
			}
			if elapsed := time.Since(start); elapsed < time.Second {
				t.Fatalf("retried after %v; the server asked for 1s", elapsed)
			}
			if len(r.waits) != 1 || r.waits[0] != time.Second {
				t.Fatalf("waits %v, want [1s]", r.waits)
			}
		})
	}
}

func TestRetryAfterBeyondTheLimitGivesUp(t *testing.T) {
	for _, f := range flavors() {
		t.Run(f.name, func(t *testing.T) {
			srv, p := f.start(t, nil)
			srv.Push(f.httpError(429, "rate_limit_error", "quota").WithHeader("Retry-After", "3600"))
			start := time.Now()
			_, err := p.Stream(context.Background(), ask(f.model()))
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Status != 429 || pe.RetryAfter != time.Hour || time.Since(start) > 5*time.Second {
				t.Fatalf("error = %v after %v; want the 429 at once, with RetryAfter 1h", err, time.Since(start))
			}
			if !strings.Contains(err.Error(), "retry after 1h0m0s") {
				t.Fatalf("error %q does not say when to retry", err)
			}
		})
	}
}

func TestPermanentErrorsAreNotRetried(t *testing.T) {
	for _, f := range flavors() {
		t.Run(f.name, func(t *testing.T) {
			var r retries
			srv, p := f.start(t, &r)
			srv.Push(f.httpError(400, "invalid_request_error", "messages: at least one message is required"))
			_, err := p.Stream(context.Background(), ask(f.model()))
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Status != 400 || pe.Type != "invalid_request_error" || pe.Temporary() {
				t.Fatalf("error = %#v", err)
			}
			if !strings.Contains(err.Error(), "fake-"+f.name) || !strings.Contains(err.Error(), "at least one message") {
				t.Fatalf("error %q does not name the provider and the server's message", err)
			}
			// A wrong key is the server's 401, not retried.
			srv.Key = "another key"
			_, err = p.Stream(context.Background(), ask(f.model()))
			if !errors.As(err, &pe) || pe.Status != 401 {
				t.Fatalf("wrong key: %v", err)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Fatalf("the error shows the key: %v", err)
			}
			if n := len(srv.Requests()); n != 2 || r.count() != 0 {
				t.Fatalf("%d requests, %d retries", n, r.count())
			}
		})
	}
}

// OpenAI's refusal of a request past the model's window (the body api.openai.com sends) is
// a 400 invalid_request_error whose message says the window, sent once: what the harness
// compacts on (harness.contextExceeded).
func TestOpenAIContextLengthRefusal(t *testing.T) {
	f := flavors()[0]
	var r retries
	srv, p := f.start(t, &r)
	srv.Push(providertest.OpenAIContextExceeded(128000, 130227))
	_, err := p.Stream(context.Background(), ask(f.model()))
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Status != 400 || pe.Type != "invalid_request_error" || pe.Temporary() || pe.Partial {
		t.Fatalf("error = %#v", err)
	}
	if !strings.Contains(pe.Message, "maximum context length is 128000 tokens") {
		t.Fatalf("message %q", pe.Message)
	}
	if n := len(srv.Requests()); n != 1 || r.count() != 0 {
		t.Fatalf("%d requests, %d retries", n, r.count())
	}
}

func TestRetriesRunOut(t *testing.T) {
	for _, f := range flavors() {
		t.Run(f.name, func(t *testing.T) {
			srv, p := f.start(t, nil)
			for range 4 {
				srv.Push(f.httpError(500, "api_error", "Internal server error"))
			}
			_, err := p.Stream(context.Background(), ask(f.model()))
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Status != 500 || pe.Attempts != 4 || !strings.Contains(err.Error(), "after 4 attempts") {
				t.Fatalf("error = %v", err)
			}
			if n := len(srv.Requests()); n != 4 {
				t.Fatalf("%d requests, want 4 (the default MaxAttempts)", n)
			}
		})
	}
}

func TestCancelStopsTheStream(t *testing.T) {
	for _, f := range flavors() {
		t.Run(f.name, func(t *testing.T) {
			srv, p := f.start(t, nil)
			var reply providertest.Reply
			if f.kind == provider.KindOpenAI {
				reply = providertest.NewOpenAIStream("m").Text("first").Pause(10 * time.Second).Text("late").Reply()
			} else {
				reply = providertest.NewAnthropicStream("m", 1).BeginText().TextDelta("first").Pause(10 * time.Second).TextDelta("late").Reply()
			}
			srv.Push(reply)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s, err := p.Stream(ctx, ask(f.model()))
			if err != nil {
				t.Fatal(err)
			}
			if ev, err := s.Next(); err != nil || ev.Text != "first" {
				t.Fatalf("first event %+v, %v", ev, err)
			}
			time.AfterFunc(50*time.Millisecond, cancel)
			start := time.Now()
			_, err = s.Next()
			if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
				t.Fatalf("Next after cancel = %v after %v", err, time.Since(start))
			}
			s.Close()
		})
	}
}
