package chat

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/hub"
	"github.com/jean2/jean2/internal/termtext"
	"github.com/jean2/jean2/server"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
)

// secondInterrupt is how soon a second Ctrl-C must follow the first to leave the chat.
const secondInterrupt = 2 * time.Second

// chatUI is one terminal conversation. Its run loop is the only goroutine that draws,
// except the ask prompts, which draw while the loop waits for their answer; both write
// through out, which serializes them.
type chatUI struct {
	// refused is the content hash of the version of each tool whose refusal was shown last
	// (grantHintLines): /grant names it, so a tool changed since is not granted unseen.
	refused map[string]string
	stdin   io.Reader
	st      chatStyle
	out     *lockedWriter
	api     *Client
	ses     session
	ws      store.Workspace
	local   bool // the server runs inside this process and ends with it
	// reconnecting: the event stream was lost and is being reconnected (it says so once back)
	reconnecting bool
	ctx          context.Context
	intr         chan os.Signal
	askDone      chan askOutcome
	wg           sync.WaitGroup // ask prompts and API calls started by the loop

	col0 bool // the cursor is at the start of a line

	running bool
	own     []string // texts sent from here whose user message is still to come
	queued  []string // lines typed while a turn ran, sent when it ends
	// attached are the MCP resources /attach attached, sent with the next message.
	attached []attachment
	// lastModel is the model of the last answer seen; prices the models' prices, read at
	// the first turn that used tokens (compact.go).
	lastModel string
	prices    map[string]server.Price
	lastIntr  time.Time

	texts     map[string]int  // text part id → bytes of its text shown
	toolShown map[string]bool // tool_call part id → its call line is shown
	toolEnded map[string]bool // tool_call part id → its outcome is shown
	lastText  string          // the text part shown last

	asker     *ask.Terminal
	askIn     chan string // lines typed while an ask is on screen, for the asker
	active    *activeAsk
	askQueue  []hub.PendingAsk
	asksKnown map[string]bool // asks prompted or resolved already, so none is asked twice

	restoredHere string // message id of the last restore made from here
	// draft is what was typed before a Ctrl-L: the start of the next line.
	draft string

	// stream follows the session's events; /fork replaces it with the fork's.
	stream *chatStream
	// modelName is "provider/model" as the header shows it.
	modelName string
	// outputs holds, per running tool call, how much of its streamed output is on screen.
	outputs map[string]*streamedOutput
	// clock times the running turn, to ring the terminal when a long one ends (notify.go).
	clock turnClock
	// bell: the output is a terminal that takes BEL and OSC 9; desktop shows notifications
	// on the desktop (nil after it failed once).
	bell    bool
	desktop DesktopNotifier
}

// chatStream is the event stream of one session, read by the run loop.
type chatStream struct {
	events chan streamItem
	stop   context.CancelFunc
	done   chan struct{}
}

type activeAsk struct {
	id     string
	cancel context.CancelCauseFunc
}

type askOutcome struct {
	id  string
	err error
}

// lockedWriter serializes writes from the loop and the ask prompts.
type lockedWriter struct {
	mu      sync.Mutex
	w       io.Writer
	midLine bool // the last byte written was not a newline
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(p) > 0 {
		l.midLine = p[len(p)-1] != '\n'
	}
	return l.w.Write(p)
}

// echoed notes that the terminal ended the line itself (it echoed the person's Enter).
func (l *lockedWriter) echoed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.midLine = false
}

// writeLine writes s on a line of its own, from any goroutine (the loop's own idea of
// where the cursor is may then be a line off, which costs a blank line at most).
func (l *lockedWriter) writeLine(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.midLine {
		s = "\n" + s
	}
	_, _ = io.WriteString(l.w, s+"\n")
	l.midLine = false
}

func newChatUI(o Options, api *Client, ses session, ws store.Workspace, local bool) *chatUI {
	u := &chatUI{
		stdin: o.Stdin, st: chatStyle{color: o.Color}, out: &lockedWriter{w: o.Stdout}, api: api, ses: ses, ws: ws, local: local,
		col0:  true,
		texts: map[string]int{}, toolShown: map[string]bool{}, toolEnded: map[string]bool{}, outputs: map[string]*streamedOutput{},
		askDone: make(chan askOutcome, 1), asksKnown: map[string]bool{},
		clock: turnClock{on: o.Notify || o.Desktop != nil}, bell: o.Notify, desktop: o.Desktop,
	}
	if api != nil {
		api.onDatabase = u.databaseNotice
	}
	return u
}

// databaseNotice says that the server's database stopped (or started again) serving
// calls; the calls waiting on it are sent again by themselves. Any goroutine may call it.
func (u *chatUI) databaseNotice(down bool, words string) {
	if down {
		u.out.writeLine(u.st.yellow("(" + words + ")"))
		return
	}
	u.out.writeLine(u.st.dim("(the database is available again)"))
}

// print writes s as is and follows where the cursor ends.
func (u *chatUI) print(s string) {
	if s == "" {
		return
	}
	_, _ = io.WriteString(u.out, s)
	u.col0 = strings.HasSuffix(s, "\n")
}

// println writes s on a line of its own.
func (u *chatUI) println(s string) {
	u.lineStart()
	u.print(s + "\n")
}

func (u *chatUI) lineStart() {
	if !u.col0 {
		u.print("\n")
	}
}

func (u *chatUI) prompt() {
	if u.running || u.active != nil {
		return
	}
	u.lineStart()
	u.print(u.st.bold("> "))
	u.col0 = false
}

// inputLine is a line the person typed, or the end of input. ctrlL says that it ended with
// Ctrl-L rather than Enter: text is what was typed before it, not yet sent.
type inputLine struct {
	text  string
	ctrlL bool
	err   error
}

// ctrlL is the character Ctrl-L types. `jean2 chat` makes the terminal end a line with it
// as with Enter (its VEOL), so it reaches the chat at once, with what was typed before it.
const ctrlL = '\f'

// readChatInput reads stdin a line at a time for as long as the process lives: a read of a
// terminal cannot be interrupted, so this goroutine is the one the chat leaves behind when it
// returns (the process exits right after).
func readChatInput(r io.Reader, lines chan<- inputLine) {
	br := bufio.NewReaderSize(r, 64<<10)
	var line strings.Builder
	for {
		c, _, err := br.ReadRune()
		if err != nil {
			if line.Len() > 0 {
				lines <- inputLine{text: strings.TrimRight(line.String(), "\r")}
			}
			lines <- inputLine{err: err}
			close(lines)
			return
		}
		switch c {
		case '\n':
			lines <- inputLine{text: strings.TrimRight(line.String(), "\r")}
			line.Reset()
		case ctrlL:
			lines <- inputLine{text: line.String(), ctrlL: true}
			line.Reset()
		default:
			line.WriteRune(c)
		}
	}
}

// run is the chat on the terminal, until the person leaves, the session's events end or
// parent is done.
func (u *chatUI) run(parent context.Context) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	u.ctx = ctx

	// Ctrl-C belongs to the chat: the first stops the turn, a second within 2 s leaves. The
	// process's handler (which would end everything at the first) is set aside meanwhile;
	// SIGTERM still ends the chat through ctx.
	signal.Reset(os.Interrupt)
	u.intr = make(chan os.Signal, 4)
	signal.Notify(u.intr, os.Interrupt)
	defer signal.Stop(u.intr)

	defer u.startAsker()()

	lines := make(chan inputLine, 16)
	go readChatInput(u.stdin, lines)

	u.modelName = u.modelLabel(ctx)
	u.banner()
	after := u.ses.LastSeq
	if after > 0 {
		after = u.showHistory(ctx)
	}
	u.follow(ctx, after)
	defer u.unfollow()
	defer func() {
		// Withdraw the question on screen and end the API calls in flight, then wait for
		// the goroutines that made them.
		if u.active != nil {
			u.active.cancel(askSettled{"the chat ended"})
		}
		cancel()
		u.wg.Wait()
	}()

	u.prompt()
	return u.loop(ctx, lines)
}

// loop takes what comes, the person's lines, the session's events, Ctrl-C and the asks'
// outcomes, one at a time until the chat ends.
func (u *chatUI) loop(ctx context.Context, lines <-chan inputLine) error {
	for {
		select {
		case <-ctx.Done():
			u.println(u.st.dim("(ended)"))
			return nil
		case it, ok := <-u.stream.events:
			if !ok {
				return nil
			}
			if it.err != nil {
				u.println(u.st.red("jean2 chat: " + it.err.Error()))
				return it.err
			}
			u.handleStreamItem(it)
		case l, ok := <-lines:
			if quit := u.takeLine(ctx, l, ok, lines); quit {
				u.leaving()
				return nil
			}
		case <-u.intr:
			if quit := u.interrupt(); quit {
				u.leaving()
				return nil
			}
		case o := <-u.askDone:
			u.askEnded(o)
		}
	}
}

// takeLine takes one line the person typed (ok false: the input ended) and reports whether
// the chat ends with it. A line ended with Ctrl-L is kept as the draft of the next.
func (u *chatUI) takeLine(ctx context.Context, l inputLine, ok bool, lines <-chan inputLine) (quit bool) {
	if !ok || l.err != nil {
		if l.err != nil && !errors.Is(l.err, io.EOF) {
			u.println(u.st.red("jean2 chat: reading the terminal: " + l.err.Error()))
		}
		return true
	}
	if l.ctrlL {
		u.ctrlL(ctx, l.text)
		return false
	}
	u.col0 = true // the terminal echoed the person's Enter
	u.out.echoed()
	text := u.draft + l.text
	u.draft = ""
	return u.handleLine(ctx, text, lines)
}

// startAsker sets up the asks' terminal: they read their answers through a pipe the loop
// feeds while an ask is on screen. The function returned closes it.
func (u *chatUI) startAsker() func() {
	pr, pw := io.Pipe()
	u.asker = ask.NewTerminal(pr, u.out, nil)
	u.askIn = make(chan string, 64)
	feederDone := make(chan struct{})
	go func() {
		defer close(feederDone)
		for l := range u.askIn {
			if _, err := io.WriteString(pw, l+"\n"); err != nil {
				return
			}
		}
	}()
	return func() {
		close(u.askIn)
		_ = pw.Close()
		<-feederDone
		_ = u.asker.Close()
	}
}

// follow starts reading the session's events from after.
func (u *chatUI) follow(ctx context.Context, after int64) {
	ctx, stop := context.WithCancel(ctx)
	s := &chatStream{events: make(chan streamItem, 1024), stop: stop, done: make(chan struct{})}
	id := u.ses.ID
	go func() {
		defer close(s.done)
		u.api.streamEvents(ctx, id, after, s.events)
	}()
	u.stream = s
}

// unfollow ends the event stream and waits for its goroutine.
func (u *chatUI) unfollow() {
	s := u.stream
	s.stop()
	for range s.events { // let the stream goroutine finish its last send
	}
	<-s.done
}

func (u *chatUI) banner() {
	u.header()
	u.println(u.st.dim("Type a message. /restore puts files back, /help lists commands; Ctrl-C stops a turn, twice leaves; Ctrl-L draws the screen again."))
}

// header names the session, its model and the workspace.
func (u *chatUI) header() {
	where := u.ws.Path
	if where == "" {
		where = u.ws.ID
	}
	u.println(u.st.bold("jean2 chat") + u.st.dim(fmt.Sprintf(" · session %s · %s · ", u.ses.ID, termtext.Line(u.modelName))) +
		u.st.bold("agent "+termtext.Line(u.agentName())) + u.st.dim(" · "+termtext.Line(where)))
}

// modelLabel is the session's provider and model as "provider/model": the session's own, or
// the server's default provider and its model.
func (u *chatUI) modelLabel(ctx context.Context) string {
	prov, model := u.ses.Provider, u.ses.Model
	if prov == "" || model == "" {
		var ps struct {
			Default   string `json:"default"`
			Providers []struct {
				Name  string `json:"name"`
				Model string `json:"model"`
			} `json:"providers"`
		}
		if err := u.api.Call(ctx, http.MethodGet, "/api/providers", nil, &ps); err != nil {
			return "model unknown (" + err.Error() + ")"
		}
		if prov == "" {
			prov = ps.Default
		}
		for _, p := range ps.Providers {
			if p.Name == prov && model == "" {
				model = p.Model
			}
		}
	}
	switch {
	case prov == "":
		return "no provider configured"
	case model == "":
		return prov + "/its default model"
	}
	return prov + "/" + model
}

// redraw clears the screen (Ctrl-L) and draws the header and the session's latest messages
// again.
func (u *chatUI) redraw(ctx context.Context) {
	u.print("\x1b[H\x1b[2J\x1b[3J")
	u.col0 = true
	u.texts, u.toolShown, u.toolEnded = map[string]int{}, map[string]bool{}, map[string]bool{}
	u.lastText = ""
	u.banner()
	u.showHistory(ctx)
}

// ctrlL acts on Ctrl-L, pressed after typing typed: outside a question it clears the screen
// and draws the session again with typed back after the prompt. typed is kept as the start
// of the next line either way (the terminal has handed it over, so it can no longer be
// edited there).
func (u *chatUI) ctrlL(ctx context.Context, typed string) {
	u.draft += typed
	if u.active != nil {
		return // redrawing would take the question off the screen
	}
	u.redraw(ctx)
	if u.running {
		u.println(u.st.dim("(a turn is running)"))
	}
	u.prompt()
	if u.draft != "" {
		u.print(termtext.Line(u.draft))
	}
	u.col0 = false
}

// leaving says what becomes of a running turn.
func (u *chatUI) leaving() {
	switch {
	case u.running && u.local:
		u.println(u.st.yellow("Leaving: the turn stops with the chat's server."))
	case u.running:
		u.println(u.st.dim(fmt.Sprintf("Leaving; the turn goes on at the server. jean2 chat --session %s comes back to it.", u.ses.ID)))
	default:
		u.println(u.st.dim(fmt.Sprintf("Bye. jean2 chat --session %s goes on with this session.", u.ses.ID)))
	}
}

// interrupt handles Ctrl-C and reports whether the chat should end.
func (u *chatUI) interrupt() bool {
	now := time.Now()
	if !u.lastIntr.IsZero() && now.Sub(u.lastIntr) < secondInterrupt {
		return true
	}
	u.lastIntr = now
	if u.running {
		u.println(u.st.yellow("Stopping the turn…") + u.st.dim(" (Ctrl-C again within 2 s leaves the chat)"))
		if u.active != nil {
			u.active.cancel(askSettled{"the turn is being stopped"})
		}
		u.stopTurn()
		return false
	}
	u.println(u.st.dim("(Ctrl-C again within 2 s leaves the chat; /quit does too)"))
	u.prompt()
	return false
}

func (u *chatUI) stopTurn() {
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		ctx, cancel := context.WithTimeout(u.ctx, 10*time.Second)
		defer cancel()
		var out struct {
			Stopped bool `json:"stopped"`
		}
		if err := u.api.Call(ctx, http.MethodPost, "/api/sessions/"+url.PathEscape(u.ses.ID)+"/stop", nil, &out); err != nil && u.ctx.Err() == nil {
			fmt.Fprintf(u.out, "%s\n", u.st.red("jean2 chat: stop the turn: "+err.Error()))
		}
	}()
}

// handleLine acts on a line typed outside an ask prompt, or hands it to the prompt. It
// reports whether the chat should end.
func (u *chatUI) handleLine(ctx context.Context, text string, lines <-chan inputLine) bool {
	if u.active != nil {
		// A question on screen does not keep the person in: /quit leaves (the ask stays
		// pending for another client, or times out).
		if t := strings.TrimSpace(text); t == "/quit" || t == "/exit" {
			return true
		}
		select {
		case u.askIn <- text:
		default:
			u.println(u.st.dim("(that line was dropped: answer the question first)"))
		}
		return false
	}
	trimmed := strings.TrimSpace(text)
	switch {
	case tabLine(text):
		u.agentCommand(ctx, "", true)
		u.prompt()
		return false
	case trimmed == "":
		u.prompt()
		return false
	case trimmed == "/quit" || trimmed == "/exit":
		return true
	case trimmed == "/help":
		u.println(Commands)
		u.prompt()
		return false
	case trimmed == "/stop":
		if u.running {
			u.println(u.st.yellow("Stopping the turn…"))
			u.stopTurn()
		} else {
			u.println(u.st.dim("(no turn is running)"))
			u.prompt()
		}
		return false
	case u.promptedCommand(ctx, trimmed):
		u.prompt()
		return false
	case trimmed == "/goal" || strings.HasPrefix(trimmed, "/goal "):
		u.goalCommand(ctx, strings.TrimPrefix(trimmed, "/goal"))
		if !u.running {
			u.prompt()
		}
		return false
	case trimmed == "/compact":
		if u.running {
			u.println(u.st.dim("(a turn is running: compact when it has finished; long turns are compacted by themselves)"))
			return false
		}
		u.compact()
		u.prompt()
		return false
	case trimmed == "/restore":
		if u.running {
			u.println(u.st.dim("(a turn is running: restore when it has finished, or stop it first)"))
			return false
		}
		return u.restoreDialog(ctx, lines)
	case u.controlCommand(ctx, trimmed):
		return false
	case strings.HasPrefix(trimmed, "/") && !strings.Contains(trimmed, " ") && len(trimmed) < 20:
		u.println(u.st.dim(fmt.Sprintf("(%s is not a command: /agent, /goal, /attach, /detach, /model, /compact, /tokens, /sessions, /title, /search, /diff, /grant, /restore, /edit, /retry, /fork, /stop, /help, /quit; a message starting with / needs a space in it)", termtext.Line(trimmed))))
		u.prompt()
		return false
	}
	if u.running {
		u.queued = append(u.queued, text)
		u.println(u.st.dim("(queued: sent when this turn ends)"))
		return false
	}
	u.send(ctx, text)
	return false
}

// promptedCommand runs one of the commands that print something and then prompt again;
// false when trimmed is none of them.
func (u *chatUI) promptedCommand(ctx context.Context, trimmed string) bool {
	name, arg, _ := strings.Cut(trimmed, " ")
	if arg != "" {
		arg = " " + arg
	}
	withArg := map[string]func(context.Context, string){
		"/agent": func(ctx context.Context, a string) { u.agentCommand(ctx, a, false) },
		"/title": u.rename, "/search": u.search, "/model": u.model, "/attach": u.attach, "/diff": u.diffCommand,
		"/grant": u.grant,
	}
	bare := map[string]func(){
		"/help": func() { u.println(Commands) }, "/detach": u.detach,
		"/sessions": func() { u.sessions(ctx) }, "/tokens": func() { u.tokens(ctx) },
	}
	if f, ok := withArg[name]; ok {
		f(ctx, arg)
		return true
	}
	if f, ok := bare[name]; ok && arg == "" {
		f()
		return true
	}
	return false
}

// untilInterrupt is ctx, ended by a Ctrl-C that comes before done is called: for a call the
// loop waits on, which the person may give up. done counts that Ctrl-C as the loop would,
// and reports whether it came.
func (u *chatUI) untilInterrupt(ctx context.Context) (_ context.Context, done func() (pressed bool)) {
	ctx, cancel := context.WithCancel(ctx)
	stop := make(chan struct{})
	pressed := make(chan time.Time, 1) // when Ctrl-C was pressed; zero when it was not
	go func() {
		select {
		case <-u.intr:
			cancel()
			pressed <- time.Now()
		case <-stop:
			pressed <- time.Time{}
		}
	}()
	return ctx, func() bool {
		close(stop)
		at := <-pressed
		if !at.IsZero() {
			u.lastIntr = at
		}
		cancel()
		return !at.IsZero()
	}
}

// send starts a turn with text.
func (u *chatUI) send(ctx context.Context, text string) {
	var out struct {
		Turn struct {
			ID            string `json:"id"`
			UserMessageID string `json:"userMessageId"`
		} `json:"turn"`
	}
	body := map[string]any{"text": text}
	if len(u.attached) > 0 {
		body["resources"] = u.attached
	}
	// Sent again by itself while the database is unavailable; Ctrl-C gives up on it.
	cctx, gaveUp := u.untilInterrupt(ctx)
	err := u.api.Call(cctx, http.MethodPost, "/api/sessions/"+url.PathEscape(u.ses.ID)+"/turns", body, &out)
	if gaveUp() && err != nil {
		u.println(u.st.yellow("Not sent: you stopped waiting for the server."))
		u.println(u.st.dim("(your message: " + clip(termtext.Line(text), 200) + ")"))
		u.prompt()
		return
	}
	if _, busy := isAPIError(err, "busy"); busy {
		u.queued = append(u.queued, text)
		u.running = true
		u.println(u.st.dim("(a turn started elsewhere is running: your message is sent when it ends)"))
		return
	}
	if err != nil {
		u.println(u.st.red("Could not start the turn: " + err.Error()))
		if _, none := isAPIError(err, "no_provider"); none {
			u.println(u.st.dim("(add a provider in the web client's Settings — " + u.api.Base() + "/#/settings — or restart the server with OPENAI_API_KEY and OPENAI_MODEL set; /model lists a provider's models)"))
		}
		u.println(u.st.dim("(your message: " + clip(termtext.Line(text), 200) + ")"))
		if len(u.attached) > 0 {
			u.println(u.st.dim("(the attached resources stay attached; /detach drops them)"))
		}
		u.prompt()
		return
	}
	u.attached = nil
	u.running = true
	u.own = append(u.own, text)
	// The server names the session after its first turn (the model, or the first line).
}

func (u *chatUI) handleStreamItem(it streamItem) {
	switch {
	case it.notice != "":
		u.println(u.st.dim("(" + it.notice + ")"))
		u.reconnecting = true
	case it.hello != nil:
		if u.reconnecting {
			u.reconnecting = false
			u.println(u.st.dim("(connected to the server again)"))
			u.prompt()
		}
		if it.hello.Running && !u.running {
			u.running = true
			u.println(u.st.dim("(a turn is running in this session)"))
		}
		for _, p := range it.hello.PendingAsks {
			u.queueAsk(p)
		}
	case it.event != nil:
		u.handleEvent(*it.event)
	}
}

func (u *chatUI) handleEvent(ev store.Event) {
	decode := func(v any) bool { return json.Unmarshal(ev.Payload, v) == nil }
	switch ev.Type {
	case harness.EventTurnStarted:
		u.running = true
		u.clock.start()
	case harness.EventMessageCreated:
		var p harness.MessageEvent
		if decode(&p) {
			m := p.Message.Message
			m.Parts = p.Message.Parts
			u.messageCreated(m)
		}
	case harness.EventMessageUpdated:
		var p harness.MessageEvent
		if decode(&p) && p.Message.Status == store.StatusError && p.Message.Error != "" {
			if stoppedByUser(p.Message.Error) {
				u.println(u.st.yellow("■ Stopped."))
			} else {
				u.println(u.st.red("The model failed: " + termtext.Text(p.Message.Error)))
			}
		}
	case harness.EventPartCreated, harness.EventPartUpdated:
		var p harness.PartEvent
		if decode(&p) {
			u.showPart(p.Part)
		}
	case harness.EventPartDelta:
		var p harness.PartDelta
		if decode(&p) {
			u.showText(p.PartID, p.Text)
		}
	case harness.EventToolProgress:
		var p harness.ToolProgress
		if decode(&p) {
			u.showProgress(p.PartID, p.Progress)
		}
	case hub.EventAskPending:
		var p hub.AskPendingPayload
		if decode(&p) {
			u.notifyAsk()
			u.queueAsk(p.Ask)
		}
	case hub.EventAskResolved:
		var p hub.AskResolvedPayload
		if decode(&p) {
			u.askResolved(p)
		}
	case harness.EventTurnFinished:
		var p harness.TurnFinished
		if decode(&p) {
			u.turnFinished(p)
		}
	case harness.EventGoalChanged:
		var p harness.GoalChanged
		if decode(&p) {
			u.showGoal(p)
		}
	case harness.EventHookFailed:
		var p harness.HookFailed
		if decode(&p) {
			u.println(u.st.yellow(fmt.Sprintf("(hook %s %s failed: %s)", termtext.Line(p.Event), termtext.Line(p.Command), termtext.Line(p.Error))))
		}
	case "session.updated":
		var p struct{ Session session }
		if decode(&p) {
			u.sessionUpdated(p.Session)
		}
	case harness.EventRestoreDone:
		var p harness.RestoreDone
		if decode(&p) && p.MessageID != u.restoredHere {
			u.println(u.st.cyan("Files were restored from another client:"))
			u.showReport(p.Report)
			u.prompt()
		}
	}
}

// messageCreated shows a new message: a person's from another client (its own were shown
// as typed), an answer's parts.
func (u *chatUI) messageCreated(m store.Message) {
	if m.Role == store.RoleUser {
		if len(u.own) > 0 && u.own[0] == m.Content {
			u.own = u.own[1:]
			return
		}
		if fromJean2(m.Content) {
			u.println(u.st.cyan("jean2: ") + termtext.Text(m.Content))
			return
		}
		u.println(u.st.cyan("(from another client) ") + u.st.bold("you: ") + termtext.Text(m.Content) + u.st.dim(attachmentsNote(m.Parts)))
		return
	}
	if m.Role == store.RoleAssistant && m.Model != "" {
		u.lastModel = m.Model
	}
	for _, part := range m.Parts {
		u.showPart(part)
	}
}

// sessionUpdated notes an agent another client switched to. Any other change of the
// session (its title, set when the first answer ends) is no switch: the session's agent
// is compared as it runs (none named is the default).
func (u *chatUI) sessionUpdated(ses session) {
	if ses.ID == u.ses.ID && agentOrDefault(ses.Agent) != u.agentName() {
		u.ses.Agent = ses.Agent
		u.println(u.st.cyan("(agent switched to " + termtext.Line(u.agentName()) + " from another client)"))
	}
}

// showText prints text appended to a text part.
func (u *chatUI) showText(partID, text string) {
	if text == "" {
		return
	}
	if u.lastText != partID {
		u.lineStart()
		u.lastText = partID
	}
	u.print(termtext.Text(text))
	u.texts[partID] += len(text)
}

// showPart shows what is new in a part: text not shown yet, a tool call starting, its
// outcome.
func (u *chatUI) showPart(p store.Part) {
	switch p.Kind {
	case store.PartCompaction:
		u.lastText = ""
		u.lineStart()
		u.println(u.st.dim("── " + compactionLine(p) + " ──"))
	case store.PartText:
		if shown := u.texts[p.ID]; len(p.Text) > shown {
			u.showText(p.ID, p.Text[shown:])
		}
	case store.PartToolCall, store.PartToolResult:
		if p.Status == store.StatusPending || p.Status == store.StatusStreaming {
			return // the arguments are still coming
		}
		u.lastText = ""
		if !u.toolShown[p.ID] {
			u.toolShown[p.ID] = true
			u.println(u.st.cyan("⏺ ") + u.st.bold(termtext.Line(p.ToolName)) + u.st.dim(argsSummary(p.Args)))
		}
		if u.toolEnded[p.ID] || (p.Status != store.StatusComplete && p.Status != store.StatusError) {
			return
		}
		u.toolEnded[p.ID] = true
		delete(u.outputs, p.ID)
		took := ""
		if p.Duration > 0 {
			took = " " + p.Duration.Round(time.Millisecond).String()
		}
		if p.Status == store.StatusError && stoppedByUser(p.Error) {
			u.println("  " + u.st.yellow("■ stopped") + u.st.dim(took))
		} else if p.Status == store.StatusError {
			u.println("  " + u.st.red("✗ "+termtext.Text(p.Error)) + u.st.dim(took))
			u.grantHintLines(p.ToolName, p.Error, p.ToolHash)
		} else {
			u.println("  " + u.st.green("✓") + u.st.dim(took))
		}
		u.lineStart()
		drawViz(u.out, u.st, p.Visualization, "    ")
		u.col0 = true
	}
}

// argsSummary shows a call's arguments on one line.
func argsSummary(args string) string {
	args = strings.TrimSpace(args)
	if args == "" || args == "{}" {
		return ""
	}
	// Compacted, and without JSON's HTML escaping: a command reads `a && b`, not `a \u0026\u0026 b`.
	var v any
	if json.Unmarshal([]byte(args), &v) == nil {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if enc.Encode(v) == nil {
			args = strings.TrimSuffix(b.String(), "\n")
		}
	}
	return " " + clip(termtext.Line(args), 120)
}

func (u *chatUI) showProgress(partID string, p tool.Progress) {
	var stream struct {
		Stream string `json:"stream"`
	}
	if len(p.Data) > 0 && json.Unmarshal(p.Data, &stream) == nil && stream.Stream != "" {
		u.showStreamed(partID, p.Message)
		return
	}
	msg := termtext.Line(p.Message)
	if p.Total > 0 {
		msg = strings.TrimSpace(fmt.Sprintf("%s %.0f/%.0f", msg, p.Current, p.Total))
	}
	if msg != "" {
		u.println(u.st.dim("  … " + msg))
	}
}

func (u *chatUI) turnFinished(p harness.TurnFinished) {
	u.notifyTurnEnd(p)
	u.running = false
	u.lastText = ""
	var parts []string
	switch p.Reason {
	case harness.ReasonDone:
		parts = append(parts, u.st.green("done"))
	case harness.ReasonStopped:
		parts = append(parts, u.st.yellow("stopped"))
	case harness.ReasonBudget:
		parts = append(parts, u.st.yellow("paused: the work budget of this turn is spent (say \"go on\" to continue)"))
	case harness.ReasonCeiling:
		parts = append(parts, u.st.yellow("ended: the most rounds a turn may take"))
	case harness.ReasonInterrupted:
		parts = append(parts, u.st.yellow("interrupted (the server stopped)"))
	case harness.ReasonError:
		parts = append(parts, u.st.red("failed"))
	default:
		parts = append(parts, termtext.Line(p.Reason))
	}
	if p.Changed.Files > 0 || p.Changed.Failed > 0 {
		changed := fmt.Sprintf("Changed %d file%s", p.Changed.Files, plural(p.Changed.Files))
		if p.Changed.Failed > 0 {
			changed += fmt.Sprintf(" (%d failed)", p.Changed.Failed)
		}
		parts = append(parts, changed)
	}
	if p.Usage.InputTokens > 0 || p.Usage.OutputTokens > 0 {
		tokens := fmt.Sprintf("%d in / %d out tokens", p.Usage.InputTokens, p.Usage.OutputTokens)
		if cost := u.turnCost(u.lastModel, p.Usage.InputTokens, p.Usage.OutputTokens); cost != "" {
			tokens += " (" + cost + ")"
		}
		parts = append(parts, tokens)
	}
	u.println(u.st.dim("── ") + strings.Join(parts, u.st.dim(" · ")))
	if p.Error != "" && p.Reason != harness.ReasonStopped {
		u.println(u.st.red(termtext.Text(p.Error)))
	}
	if len(u.queued) > 0 {
		text := strings.Join(u.queued, "\n")
		u.queued = nil
		u.println(u.st.bold("> ") + termtext.Text(text))
		u.send(u.ctx, text)
		return
	}
	u.println("")
	u.prompt()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// queueAsk puts a pending ask in line to be asked here.
func (u *chatUI) queueAsk(p hub.PendingAsk) {
	if u.asksKnown[p.ID] {
		return
	}
	u.asksKnown[p.ID] = true
	if p.Ask.Type == tool.AskClientCapability {
		u.println(u.st.dim(fmt.Sprintf("(tool %s asks for the client capability %q, which the terminal does not have; another client may answer)",
			termtext.Line(p.Tool), termtext.Line(p.Ask.Capability))))
		return
	}
	u.askQueue = append(u.askQueue, p)
	u.nextAsk()
}

// nextAsk puts the next queued ask on screen when none is.
func (u *chatUI) nextAsk() {
	if u.active != nil || len(u.askQueue) == 0 {
		return
	}
	p := u.askQueue[0]
	u.askQueue = u.askQueue[1:]
	ctx, cancel := context.WithCancelCause(u.ctx)
	u.active = &activeAsk{id: p.ID, cancel: cancel}
	u.lastText = ""
	u.lineStart()
	if p.FromSessionID != "" {
		u.println(u.st.dim("(a subagent asks: session " + termtext.Line(p.FromSessionID) + ")"))
	}
	// The asker names the tool that asks when the context says which.
	ctx = ask.ContextWithCall(ctx, ask.Call{Tool: p.Tool, CallID: p.CallID, SessionID: p.SessionID})
	u.col0 = false // the prompt leaves the cursor after it
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		var answer json.RawMessage
		var err error
		if p.Ask.Type == tool.AskPermission {
			var d ask.Decision
			if d, err = u.asker.AskPermission(ctx, p.Ask); err == nil {
				answer, err = json.Marshal(d)
			}
		} else {
			answer, err = u.asker.Ask(ctx, p.Ask)
		}
		if err == nil {
			// Sent even when the ask was withdrawn meanwhile: the server says whether it
			// still counts.
			err = u.api.Call(u.ctx, http.MethodPost, "/api/sessions/"+url.PathEscape(u.ses.ID)+"/asks/"+url.PathEscape(p.ID),
				map[string]any{"answer": answer}, nil)
		} else if cause := context.Cause(ctx); cause != nil {
			err = cause
		}
		select {
		case u.askDone <- askOutcome{id: p.ID, err: err}:
		case <-u.ctx.Done():
		}
	}()
}

func (u *chatUI) askEnded(o askOutcome) {
	if u.active != nil && u.active.id == o.id {
		u.active.cancel(nil)
		u.active = nil
	}
	u.col0 = true // the prompt ended its line
	switch {
	case o.err == nil:
	case errors.Is(o.err, errAskSettled):
		// askResolved said what became of it.
	default:
		if _, gone := isAPIError(o.err, "not_found"); gone {
			u.println(u.st.dim("(that question had been answered elsewhere, or had ended)"))
		} else if u.ctx.Err() == nil {
			u.println(u.st.red("The answer was not taken: " + termtext.Text(o.err.Error())))
		}
	}
	u.nextAsk()
	if u.active == nil {
		u.prompt()
	}
}

// errAskSettled marks the withdrawal of a prompt whose ask ended elsewhere.
var errAskSettled = errors.New("the question was settled elsewhere")

// askSettled says why a prompt was withdrawn; the asker shows it.
type askSettled struct{ why string }

func (e askSettled) Error() string        { return e.why }
func (e askSettled) Is(target error) bool { return target == errAskSettled }

// askResolved withdraws an ask that ended elsewhere (another client answered, it timed out,
// the turn stopped) and shows what a policy decided.
func (u *chatUI) askResolved(p hub.AskResolvedPayload) {
	u.asksKnown[p.AskID] = true
	for i, q := range u.askQueue {
		if q.ID == p.AskID {
			u.askQueue = append(u.askQueue[:i], u.askQueue[i+1:]...)
			break
		}
	}
	if u.active != nil && u.active.id == p.AskID {
		why := map[string]string{
			hub.OutcomeAnswered:  "answered in another client",
			hub.OutcomeTimeout:   "no answer came in time",
			hub.OutcomeCancelled: "the call no longer waits for it",
		}[p.Outcome]
		if why == "" {
			why = termtext.Line(p.Outcome)
		}
		u.active.cancel(askSettled{why})
	}
	if p.Outcome == hub.OutcomePolicy && p.Ask != nil {
		decided := "refused"
		var d ask.Decision
		if json.Unmarshal(p.Answer, &d) == nil && d.Granted {
			decided = "granted"
		} else if p.Answer != nil && p.Error == "" && p.Ask.Type == tool.AskPermission {
			decided = "denied"
		}
		u.println(u.st.dim(fmt.Sprintf("(no one was attached: the policy %s %s's %q)", decided, termtext.Line(p.Tool), termtext.Line(p.Ask.Question))))
	}
}

// showHistory prints the session's earlier messages and returns the seq to follow events
// from.
func (u *chatUI) showHistory(ctx context.Context) int64 {
	var out struct {
		Messages []store.Message `json:"messages"`
		LastSeq  *int64          `json:"lastSeq"`
	}
	if err := u.api.Call(ctx, http.MethodGet, "/api/sessions/"+url.PathEscape(u.ses.ID)+"/messages", nil, &out); err != nil {
		u.println(u.st.red("Could not load the session's messages: " + err.Error()))
		return u.ses.LastSeq
	}
	const keep = 40
	msgs := out.Messages
	if len(msgs) > keep {
		u.println(u.st.dim(fmt.Sprintf("(%d earlier messages not shown)", len(msgs)-keep)))
		msgs = msgs[len(msgs)-keep:]
	}
	for _, m := range msgs {
		if m.Role == store.RoleUser {
			u.println(u.st.bold("> ") + termtext.Text(m.Content) + u.st.dim(attachmentsNote(m.Parts)))
			continue
		}
		for _, p := range m.Parts {
			u.showPart(p)
		}
		u.lineStart()
	}
	if len(msgs) > 0 {
		u.println(u.st.dim("── earlier in this session ──"))
	}
	if out.LastSeq != nil {
		return *out.LastSeq
	}
	return u.ses.LastSeq
}
