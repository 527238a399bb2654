package ask

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jean2/jean2/internal/termtext"
	"github.com/jean2/jean2/tool"
)

// ErrInputClosed means the person closed the terminal's input (end of file) before answering.
var ErrInputClosed = errors.New("the person closed the input (end of file) without answering")

// ErrTerminalClosed is returned by a Terminal after Close.
var ErrTerminalClosed = errors.New("the terminal asker is closed")

// TerminalOptions tunes a Terminal. A nil *TerminalOptions means the defaults.
type TerminalOptions struct {
	// MaxLineBytes bounds one line of input; a longer line is refused and the question asked
	// again. Default 64 KiB.
	MaxLineBytes int
}

// Terminal asks a person at a terminal, one ask at a time, reading plain lines. It works on a
// pipe as well as on a real terminal (the terminal's own line editing and echo are used; no
// raw mode). Everything an ask shows is stripped of control characters, so a tool cannot
// redraw the screen to disguise what it asks.
type Terminal struct {
	in      *bufio.Reader
	out     io.Writer
	maxLine int

	// turn holds a token while an ask is on screen; a channel rather than a sync.Mutex so
	// that waiting for the turn can be cancelled too.
	turn chan struct{}

	startReader sync.Once
	lines       chan inputLine // the reader hands over lines here, one at a time
	readErr     error          // why the reader stopped; written before lines is closed
	done        chan struct{}  // closed by Close
	closeOnce   sync.Once

	// Guarded by turn.
	stale    bool  // an ask was withdrawn while waiting; its late line must not answer the next
	writeErr error // the first failure to write to out

	lineRead func() // test hook: called by the reader after each line arrives
}

type inputLine struct {
	text    string
	tooLong bool
	at      time.Time // when the line arrived
}

var (
	_ tool.Asker      = (*Terminal)(nil)
	_ PermissionAsker = (*Terminal)(nil)
)

// NewTerminal returns an asker that prompts on out and reads answers from in. The goroutine
// that reads in starts with the first ask and ends when in reaches end of file or fails, or
// at the next line after Close; it outlives a withdrawn ask so that no input is lost or read
// twice.
func NewTerminal(in io.Reader, out io.Writer, opts *TerminalOptions) *Terminal {
	t := &Terminal{
		in:      bufio.NewReaderSize(in, 4096),
		out:     out,
		maxLine: 64 << 10,
		turn:    make(chan struct{}, 1),
		lines:   make(chan inputLine),
		done:    make(chan struct{}),
	}
	if opts != nil && opts.MaxLineBytes > 0 {
		t.maxLine = opts.MaxLineBytes
	}
	return t
}

// Close makes every later ask fail with ErrTerminalClosed and lets the reading goroutine end
// at its next line. It does not close in: the caller owns it.
func (t *Terminal) Close() error {
	t.closeOnce.Do(func() { close(t.done) })
	return nil
}

// Ask prompts the person and returns the answer as JSON of the ask type's shape.
func (t *Terminal) Ask(ctx context.Context, a tool.Ask) (json.RawMessage, error) {
	if a.Type == tool.AskPermission {
		d, err := t.AskPermission(ctx, a)
		if err != nil {
			return nil, err
		}
		return json.Marshal(d.Granted)
	}
	if err := checkAsk(a); err != nil {
		return nil, fmt.Errorf("invalid ask: %w", err)
	}
	if a.Type == tool.AskClientCapability {
		return nil, fmt.Errorf("client_capability ask %q: a terminal cannot answer it; only a connected client that has the capability can", a.Capability)
	}
	if err := t.acquire(ctx); err != nil {
		return nil, fmt.Errorf("%s ask %q: %w", a.Type, a.Question, err)
	}
	defer t.release()
	t.header(ctx)
	v, err := t.askOne(ctx, a, "")
	if err != nil {
		return nil, fmt.Errorf("%s ask %q: %w", a.Type, a.Question, err)
	}
	return v, nil
}

// DefaultDuration is the grant a client offers first for a permission ask ("" when the ask
// suggests none, and the person must choose): the tool's suggestion only when the risk is
// low, else this one call, so that a key pressed by reflex or meant for something else never
// leaves a lasting grant behind. The web client applies the same rule (asks.js).
func DefaultDuration(a tool.Ask) string {
	switch {
	case a.Duration == "":
		return ""
	case a.Risk == "low":
		return a.Duration
	default:
		return tool.DurationOnce
	}
}

// AskPermission prompts the person to allow once, for the session, for the workspace, or to
// deny. When the ask suggests a Duration, an empty line allows: for that Duration when the
// risk is low, else once (DefaultDuration).
func (t *Terminal) AskPermission(ctx context.Context, a tool.Ask) (Decision, error) {
	if a.Type != tool.AskPermission {
		return Decision{}, fmt.Errorf("AskPermission needs a permission ask, not %q", a.Type)
	}
	if err := checkAsk(a); err != nil {
		return Decision{}, fmt.Errorf("invalid ask: %w", err)
	}
	if err := t.acquire(ctx); err != nil {
		return Decision{}, fmt.Errorf("permission ask %q: %w", a.Question, err)
	}
	defer t.release()
	t.header(ctx)
	t.printf("Permission requested: %s\n", clean(a.Question))
	t.block(a.Description)
	risk := a.Risk
	if risk == "" {
		risk = "not stated"
	}
	resource := a.Resource
	if resource == "" {
		resource = "not stated"
	}
	t.printf("  Risk: %s   Resource: %s\n", clean(risk), clean(resource))
	if len(a.Paths) > 0 {
		t.printf("  Paths: %s\n", cleanList(a.Paths))
	}
	if len(a.Patterns) > 0 {
		t.printf("  Patterns: %s\n", cleanList(a.Patterns))
	}
	choices := []struct{ label, duration string }{
		{"allow once", tool.DurationOnce},
		{"allow for session", tool.DurationSession},
		{"allow for workspace", tool.DurationWorkspace},
		{"deny", ""},
	}
	suggested := DefaultDuration(a)
	def := ""
	for i, c := range choices {
		mark := ""
		if c.duration != "" && c.duration == suggested {
			mark = "   (default)"
			def = strconv.Itoa(i + 1)
		}
		t.printf("  %d) %s%s\n", i+1, c.label, mark)
	}
	prompt := "Choose 1-4 (y/n): "
	if def != "" {
		prompt = fmt.Sprintf("Choose 1-4 (y/n) [%s]: ", def)
	}
	d, err := promptFor(ctx, t, prompt, func(line string) (Decision, string) {
		switch strings.ToLower(line) {
		case "":
			if suggested == "" {
				return Decision{}, "Please choose: type 1, 2, 3 or 4 (or once, session, workspace, deny; y allows once, n denies)."
			}
			return Decision{Granted: true, Duration: suggested}, ""
		case "1", "o", "once", "allow once", "y", "yes":
			return Decision{Granted: true, Duration: tool.DurationOnce}, ""
		case "2", "s", "session", "allow for session":
			return Decision{Granted: true, Duration: tool.DurationSession}, ""
		case "3", "w", "workspace", "allow for workspace":
			return Decision{Granted: true, Duration: tool.DurationWorkspace}, ""
		case "4", "d", "n", "no", "deny":
			return Decision{}, ""
		}
		return Decision{}, fmt.Sprintf("%q is not a choice: type 1, 2, 3 or 4 (or once, session, workspace, deny; y allows once, n denies).", clean(line))
	})
	if err != nil {
		return Decision{}, fmt.Errorf("permission ask %q: %w", a.Question, err)
	}
	if d.Granted {
		t.printf("Allowed (%s).\n", d.Duration)
	} else {
		t.printf("Denied.\n")
	}
	return d, nil
}

// askOne shows one human question and reads its answer; prefix numbers the questions of a form.
func (t *Terminal) askOne(ctx context.Context, a tool.Ask, prefix string) (json.RawMessage, error) {
	switch a.Type {
	case tool.AskSingleSelect:
		return t.askSingle(ctx, a, prefix)
	case tool.AskMultiSelect:
		return t.askMulti(ctx, a, prefix)
	case tool.AskText:
		return t.askText(ctx, a, prefix)
	case tool.AskNumber:
		return t.askNumber(ctx, a, prefix)
	case tool.AskConfirm:
		return t.askConfirm(ctx, a, prefix)
	case tool.AskForm:
		return t.askForm(ctx, a)
	}
	return nil, fmt.Errorf("a terminal cannot answer %q asks", a.Type)
}

func (t *Terminal) showOptions(a tool.Ask, prefix string) {
	t.printf("%s%s\n", prefix, clean(a.Question))
	t.block(a.Description)
	for i, o := range a.Options {
		if o.Description != "" {
			t.printf("  %d) %s — %s\n", i+1, clean(o.Label), clean(o.Description))
		} else {
			t.printf("  %d) %s\n", i+1, clean(o.Label))
		}
	}
}

// choose reads one option from a token: its number or its label (case-insensitive).
func choose(a tool.Ask, token string) (int, bool) {
	if n, err := strconv.Atoi(token); err == nil {
		if n >= 1 && n <= len(a.Options) {
			return n - 1, true
		}
		return 0, false
	}
	for i, o := range a.Options {
		if strings.EqualFold(strings.TrimSpace(o.Label), token) {
			return i, true
		}
	}
	return 0, false
}

func (t *Terminal) askSingle(ctx context.Context, a tool.Ask, prefix string) (json.RawMessage, error) {
	t.showOptions(a, prefix)
	def := -1
	if d := defaultOf(a); d != nil {
		def = findOption(a, d)
	}
	n := len(a.Options)
	prompt := fmt.Sprintf("Choose one (1-%d or a label): ", n)
	if def >= 0 {
		prompt = fmt.Sprintf("Choose one (1-%d or a label) [%d]: ", n, def+1)
	}
	return promptFor(ctx, t, prompt, func(line string) (json.RawMessage, string) {
		if line == "" && def >= 0 {
			return optionValue(a.Options[def]), ""
		}
		if i, ok := choose(a, line); ok {
			return optionValue(a.Options[i]), ""
		}
		if line == "" {
			return nil, fmt.Sprintf("Please choose one: type a number from 1 to %d or an option's label.", n)
		}
		return nil, fmt.Sprintf("%q is not an option: type a number from 1 to %d or an option's label.", clean(line), n)
	})
}

func (t *Terminal) askMulti(ctx context.Context, a tool.Ask, prefix string) (json.RawMessage, error) {
	t.showOptions(a, prefix)
	lo, hi := bounds(a)
	def := defaultOf(a)
	n := len(a.Options)
	rule := "choose " + countPhrase(lo, hi)
	prompt := fmt.Sprintf("Choose numbers or labels separated by commas (%s): ", rule)
	if def != nil {
		prompt = fmt.Sprintf("Choose numbers or labels separated by commas (%s) [%s]: ", rule, defaultNumbers(a, def))
	}
	return promptFor(ctx, t, prompt, func(line string) (json.RawMessage, string) {
		if line == "" && def != nil {
			return def, ""
		}
		var picked []json.RawMessage
		seen := map[int]bool{}
		for _, tok := range strings.Split(line, ",") {
			tok = strings.TrimSpace(tok)
			if tok == "" {
				continue
			}
			i, ok := choose(a, tok)
			if !ok {
				return nil, fmt.Sprintf("%q is not an option: use numbers from 1 to %d or labels, separated by commas (%s).", clean(tok), n, rule)
			}
			if !seen[i] {
				seen[i] = true
				picked = append(picked, optionValue(a.Options[i]))
			}
		}
		if len(picked) < lo || len(picked) > hi {
			return nil, fmt.Sprintf("You chose %d; %s, separated by commas.", len(picked), rule)
		}
		if picked == nil {
			picked = []json.RawMessage{}
		}
		v, err := json.Marshal(picked)
		if err != nil {
			return nil, err.Error()
		}
		return v, ""
	})
}

// defaultNumbers shows a multi_select default as the option numbers a person would type.
func defaultNumbers(a tool.Ask, def json.RawMessage) string {
	var vals []json.RawMessage
	_ = json.Unmarshal(def, &vals)
	nums := make([]string, 0, len(vals))
	for _, v := range vals {
		if i := findOption(a, v); i >= 0 {
			nums = append(nums, strconv.Itoa(i+1))
		}
	}
	return strings.Join(nums, ",")
}

func (t *Terminal) askText(ctx context.Context, a tool.Ask, prefix string) (json.RawMessage, error) {
	t.printf("%s%s\n", prefix, clean(a.Question))
	t.block(a.Description)
	var def string
	hasDef := false
	if d := defaultOf(a); d != nil {
		hasDef = json.Unmarshal(d, &def) == nil
	}
	prompt := "Answer"
	if a.Placeholder != "" {
		prompt += fmt.Sprintf(" (e.g. %s)", clean(a.Placeholder))
	}
	if hasDef {
		prompt += fmt.Sprintf(" [%s]", clean(def))
	}
	prompt += ": "
	return promptFor(ctx, t, prompt, func(line string) (json.RawMessage, string) {
		if line == "" && hasDef {
			line = def
		}
		v, err := json.Marshal(line)
		if err != nil {
			return nil, err.Error()
		}
		return v, ""
	})
}

// askNumber reads a number until one is in the ask's range; empty takes the default.
func (t *Terminal) askNumber(ctx context.Context, a tool.Ask, prefix string) (json.RawMessage, error) {
	t.printf("%s%s\n", prefix, clean(a.Question))
	t.block(a.Description)
	def := defaultOf(a)
	prompt := "Answer (" + numberPhrase(a) + ")"
	if def != nil {
		prompt += fmt.Sprintf(" [%s]", def)
	}
	prompt += ": "
	return promptFor(ctx, t, prompt, func(line string) (json.RawMessage, string) {
		if line == "" && def != nil {
			return def, ""
		}
		n, err := strconv.ParseFloat(line, 64)
		if err != nil || !inRange(a, n) {
			return nil, fmt.Sprintf("%q is not %s.", clean(line), numberPhrase(a))
		}
		v, _ := json.Marshal(n)
		return v, ""
	})
}

func (t *Terminal) askConfirm(ctx context.Context, a tool.Ask, prefix string) (json.RawMessage, error) {
	question := prefix + clean(a.Question) + " "
	if a.Description != "" {
		t.printf("%s\n", strings.TrimSpace(question))
		t.block(a.Description)
		question = ""
	}
	var def, hasDef bool
	if d := defaultOf(a); d != nil {
		hasDef = json.Unmarshal(d, &def) == nil
	}
	hint := "[y/n]"
	if hasDef && def {
		hint = "[Y/n]"
	} else if hasDef {
		hint = "[y/N]"
	}
	prompt := question + hint + ": "
	return promptFor(ctx, t, prompt, func(line string) (json.RawMessage, string) {
		switch strings.ToLower(line) {
		case "y", "yes":
			return json.RawMessage("true"), ""
		case "n", "no":
			return json.RawMessage("false"), ""
		case "":
			if hasDef {
				return json.RawMessage(strconv.FormatBool(def)), ""
			}
		}
		return nil, "Please answer y or n."
	})
}

func (t *Terminal) askForm(ctx context.Context, a tool.Ask) (json.RawMessage, error) {
	t.printf("Form: %s\n", clean(a.Question))
	t.block(a.Description)
	resp := tool.FormResponse{Type: tool.AskForm, Answers: make([]tool.FormAnswer, 0, len(a.Questions))}
	for i, q := range a.Questions {
		v, err := t.askOne(ctx, q, fmt.Sprintf("(%d/%d) ", i+1, len(a.Questions)))
		if err != nil {
			return nil, fmt.Errorf("question %q: %w", q.Question, err)
		}
		resp.Answers = append(resp.Answers, tool.FormAnswer{Question: q.Question, Answer: v})
	}
	return json.Marshal(resp)
}

// promptFor shows prompt and reads lines until parse accepts one; parse returns the value or
// a message that says what is expected, shown before the prompt is repeated.
func promptFor[T any](ctx context.Context, t *Terminal, prompt string, parse func(line string) (T, string)) (T, error) {
	var zero T
	for {
		line, tooLong, err := t.readLine(ctx, prompt)
		if err != nil {
			return zero, err
		}
		if tooLong {
			t.printf("That line is longer than %d bytes; please answer again.\n", t.maxLine)
			continue
		}
		v, problem := parse(strings.TrimSpace(line))
		if problem == "" {
			return v, nil
		}
		t.printf("%s\n", problem)
	}
}

// readLine shows prompt and waits for the next line, the end of input, or ctx.
func (t *Terminal) readLine(ctx context.Context, prompt string) (string, bool, error) {
	t.startReader.Do(func() { go t.readLoop() })
	t.printf("%s", prompt)
	if t.writeErr != nil {
		return "", false, fmt.Errorf("write prompt to terminal: %w", t.writeErr)
	}
	shownAt := time.Now()
	for {
		select {
		case <-ctx.Done():
			t.stale = true
			t.printf("\n(question withdrawn: %v)\n", context.Cause(ctx))
			return "", false, ctx.Err()
		case <-t.done:
			return "", false, ErrTerminalClosed
		case l, ok := <-t.lines:
			if !ok {
				if t.readErr != nil && !errors.Is(t.readErr, io.EOF) {
					return "", false, fmt.Errorf("read terminal input: %w", t.readErr)
				}
				t.printf("\n")
				return "", false, ErrInputClosed
			}
			if ctx.Err() != nil {
				// The line was typed for this ask, which is withdrawn all the same.
				return "", false, ctx.Err()
			}
			if t.stale && l.at.Before(shownAt) {
				// Typed for a question that was withdrawn; it must not answer this one.
				t.printf("(ignored a line typed before this question was shown)\n%s", prompt)
				continue
			}
			t.stale = false
			return l.text, l.tooLong, nil
		}
	}
}

// readLoop reads lines and hands each to whichever ask waits next.
func (t *Terminal) readLoop() {
	defer close(t.lines)
	for {
		text, tooLong, err := t.readRawLine()
		if err == nil || text != "" || tooLong {
			at := time.Now()
			if t.lineRead != nil {
				t.lineRead()
			}
			select {
			case t.lines <- inputLine{text: text, tooLong: tooLong, at: at}:
			case <-t.done:
				return
			}
		}
		if err != nil {
			t.readErr = err
			return
		}
	}
}

// readRawLine reads up to a newline, keeping at most maxLine bytes; the rest of a longer line
// is read and dropped.
func (t *Terminal) readRawLine() (string, bool, error) {
	var buf []byte
	tooLong := false
	for {
		chunk, err := t.in.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > t.maxLine+2 { // room for "\r\n"
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return strings.TrimRight(string(buf), "\r\n"), tooLong, err
	}
}

func (t *Terminal) acquire(ctx context.Context) error {
	select {
	case <-t.done:
		return ErrTerminalClosed
	default:
	}
	select {
	case t.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.done:
		return ErrTerminalClosed
	}
}

func (t *Terminal) release() { <-t.turn }

// header names the tool that asks, when the Broker said so.
func (t *Terminal) header(ctx context.Context) {
	t.printf("\n")
	if c, ok := CallFrom(ctx); ok && c.Tool != "" {
		t.printf("[tool %s asks]\n", clean(c.Tool))
	}
}

// block prints a multi-line text indented under the question.
func (t *Terminal) block(s string) {
	if s == "" {
		return
	}
	for _, l := range strings.Split(s, "\n") {
		t.printf("  %s\n", clean(l))
	}
}

func (t *Terminal) printf(format string, args ...any) {
	if t.writeErr != nil {
		return
	}
	if _, err := fmt.Fprintf(t.out, format, args...); err != nil {
		t.writeErr = err
	}
}

// clean makes text from a tool safe to print on one line (termtext.Line): control
// characters (escape sequences, carriage returns, bidirectional overrides) are shown as
// escapes instead of acting on the terminal.
func clean(s string) string { return termtext.Line(s) }

func cleanList(items []string) string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = clean(s)
	}
	return strings.Join(out, ", ")
}
