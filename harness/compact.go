package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/store"
)

// Compaction (docs/harness.md#compaction). Before each model call the request's size is
// estimated; when it would fill more than compactAt of the model's context window, old
// tool results are pruned first, and if that is not enough the older messages are
// summarized by the session's model into a compaction part, which the model is sent in
// their place from then on. Recent messages are kept whole.
const (
	// compactAtPercent of the window is what a request may fill: the rest is left for the
	// answer and for the estimate's error.
	compactAtPercent = 80
	// keepPercent of the window is the most the recent messages kept whole may take.
	keepPercent = 30
	// charsPerToken is the estimate's ratio: about four characters a token for English
	// and code with the tokenizers of the common models.
	charsPerToken = 4
	// imageTokens is what an image is counted as.
	imageTokens = 1600
	// pruneMinChars: tool results shorter than this are never pruned.
	pruneMinChars = 1000
	// renderResultChars is how much of a tool result the summarizer is shown.
	renderResultChars = 2000
)

// ContextWindows is what a Models may also be: it says the context window of a provider's
// model in tokens (0: unknown). Without it, or for an unknown window, sessions are
// compacted only when the provider answers that the context length was exceeded, or by
// hand (Compact).
type ContextWindows interface {
	ContextWindow(providerName, model string) int
}

// ErrNothingToCompact is returned by Compact when the session has too few messages to
// summarize any.
var ErrNothingToCompact = errors.New("nothing to compact")

// EstimateTokens estimates how many tokens a request takes: its text at about four
// characters a token, a fixed count per image, the tools' schemas included.
func EstimateTokens(req provider.Request) int {
	chars := len(req.System)
	images := 0
	for _, m := range req.Messages {
		chars += messageChars(m)
		images += len(m.Images)
	}
	if len(req.Tools) > 0 {
		b, _ := json.Marshal(req.Tools)
		chars += len(b)
	}
	return chars/charsPerToken + images*imageTokens
}

// messageChars counts a message's text, its calls and a little for its framing.
func messageChars(m provider.Message) int {
	n := 16 + len(m.Text) + len(m.ToolCallID)
	for _, c := range m.ToolCalls {
		n += 16 + len(c.ID) + len(c.Name) + len(c.Args)
	}
	return n
}

func messageTokens(m provider.Message) int {
	return messageChars(m)/charsPerToken + len(m.Images)*imageTokens
}

// lastCompaction finds the latest compaction part of a history: its summary and what it
// replaced; ok is false when the session was never compacted.
func lastCompaction(history []store.Message) (summary string, info store.CompactionInfo, ok bool) {
	for i := len(history) - 1; i >= 0; i-- {
		m := history[i]
		if m.Role != store.RoleSystem {
			continue
		}
		for j := len(m.Parts) - 1; j >= 0; j-- {
			p := m.Parts[j]
			if p.Kind != store.PartCompaction {
				continue
			}
			var ci store.CompactionInfo
			if json.Unmarshal([]byte(p.Args), &ci) != nil {
				continue
			}
			return p.Text, ci, true
		}
	}
	return "", store.CompactionInfo{}, false
}

// summaryPrompt frames a compaction's summary in the system prompt.
func summaryPrompt(summary string) string {
	return "Summary of the earlier conversation (its messages were summarized to fit the model's context window; the recent messages follow in full):\n" + summary
}

// overflowPath finds the overflow file a tool result names (host's note on a result cut
// to its preview).
var overflowPath = regexp.MustCompile(`The full result is in (\S+?) — `)

// prune replaces the tool results of msgs before index keepFrom that are longer than
// pruneMinChars with a note naming a file that holds the whole result: the overflow file the
// result already names, or one keep writes (nil keep, or keep failing, gives a note that
// says to call the tool again). It returns how many it replaced.
func prune(msgs []provider.Message, keepFrom int, keep func(callID, text string) string) int {
	n := 0
	for i := range min(keepFrom, len(msgs)) {
		m := &msgs[i]
		if m.Role != provider.RoleTool || len(m.Text) <= pruneMinChars {
			continue
		}
		note := fmt.Sprintf("[This older tool result (%d characters) was pruned to keep the conversation within the model's context window.", len(m.Text))
		path := ""
		if p := overflowPath.FindStringSubmatch(m.Text); p != nil {
			path = p[1]
		} else if keep != nil {
			path = keep(m.ToolCallID, m.Text)
		}
		if path != "" {
			note += " The full result is in " + path + ": read it with read-file if you need it again.]"
		} else {
			note += " Call the tool again if you need it.]"
		}
		m.Text = note
		n++
	}
	return n
}

// keepFrom returns the index of the first of the last messages of msgs that together fit
// in budget tokens, never splitting a call from its results (a tool message is kept with
// the assistant message that called it). The last round (the last assistant message and
// its results) is always kept: the model is acting on it.
func keepFrom(msgs []provider.Message, budget int) int {
	acc := 0
	from := len(msgs)
	lastRound := true
	for i := len(msgs) - 1; i >= 0; i-- {
		acc += messageTokens(msgs[i])
		if acc > budget && !lastRound {
			break
		}
		if msgs[i].Role != provider.RoleTool {
			from = i
			lastRound = false
		}
	}
	return from
}

// contextExceeded reports whether err is a provider's refusal of a request longer than
// the model's context window, before any output.
func contextExceeded(err error) bool {
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Partial {
		return false
	}
	switch pe.Status {
	case 0, 400, 413, 422:
	default:
		return false
	}
	s := strings.ToLower(pe.Type + " " + pe.Message)
	for _, w := range []string{"context_length_exceeded", "context length", "context window", "maximum context",
		"prompt is too long", "too many tokens", "input is too long", "reduce the length"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// compaction is one summarizing of a session's older messages.
type compaction struct {
	prov   provider.Provider
	model  string
	window int // the window to fit, in tokens (known, or estimated from the request)
	keep   int // the most tokens the recent messages kept whole may take; 0: keepPercent of window
}

// limit is the most tokens a request may take.
func (c compaction) limit() int { return c.window * compactAtPercent / 100 }

// summaryTokens is the most tokens a summary may take.
func (c compaction) summaryTokens() int { return min(max(c.window/8, 256), 4096) }

// plan chooses the messages to summarize: those after the last compaction, up to the
// recent ones that fit in keepPercent of the window (cut before a user's message where it
// can). It returns their indexes in history; none when nothing can be summarized.
func (c compaction) plan(history []store.Message) []int {
	_, prev, _ := lastCompaction(history)
	var cands []int
	for i, m := range history {
		if m.Role == store.RoleSystem || (m.Seq != 0 && m.Seq <= prev.UpToSeq) || m.Seq == 0 {
			continue
		}
		cands = append(cands, i)
	}
	if len(cands) < 3 {
		return nil
	}
	budget := c.keep
	if budget <= 0 {
		budget = c.window * keepPercent / 100
	}
	acc := 0
	cut, userCut := len(cands)-1, -1 // the last message is always kept
	for k := len(cands) - 1; k >= 1; k-- {
		msgs, _, _ := transcript([]store.Message{history[cands[k]]})
		for _, m := range msgs {
			acc += messageTokens(m)
		}
		if acc > budget {
			break
		}
		cut = k
		if history[cands[k]].Role == store.RoleUser {
			userCut = k
		}
	}
	if userCut > 0 {
		cut = userCut
	} else if c.keep > 0 {
		// By hand: the last exchange stays whole even when it is more than the budget, so
		// the model keeps the person's last request in their words.
		for k := len(cands) - 1; k >= 1; k-- {
			if history[cands[k]].Role == store.RoleUser {
				cut = k
				break
			}
		}
	}
	if cut < 2 {
		return nil // a summary of one message saves next to nothing
	}
	return cands[:cut]
}

// render writes messages as plain text for the summarizer, tool results shortened.
func render(history []store.Message, idx []int) []string {
	var blocks []string
	clip := func(s string, n int) string {
		if len(s) <= n {
			return s
		}
		return s[:n] + fmt.Sprintf(" […%d more characters]", len(s)-n)
	}
	for _, i := range idx {
		m := history[i]
		var b strings.Builder
		switch m.Role {
		case store.RoleUser:
			b.WriteString("## User\n")
			b.WriteString(m.Content)
			for _, p := range m.Parts {
				if p.Kind == store.PartImage {
					b.WriteString("\n[an image]")
				}
				if r, ok := resourceOf(p); ok {
					fmt.Fprintf(&b, "\n[resource %s of MCP server %s]", r.URI, r.Server)
				}
			}
		case store.RoleAssistant:
			if m.Finish == finishDropped {
				continue
			}
			b.WriteString("## Assistant\n")
			for _, p := range m.Parts {
				switch p.Kind {
				case store.PartText:
					b.WriteString(p.Text)
					b.WriteString("\n")
				case store.PartToolCall:
					fmt.Fprintf(&b, "[called %s(%s)", p.ToolName, clip(p.Args, 500))
					if res, isErr, ok := callResult(p); ok {
						if isErr {
							b.WriteString(" → failed: ")
						} else {
							b.WriteString(" → ")
						}
						b.WriteString(clip(res, renderResultChars))
					}
					b.WriteString("]\n")
				}
			}
		default:
			continue
		}
		blocks = append(blocks, b.String())
	}
	return blocks
}

const summarySystem = `You summarize a conversation between a person and a coding agent so that the agent can continue the work with the summary in place of the messages. Write a dense summary, in the conversation's language, that keeps: the person's goals and requests (verbatim where they are precise), decisions taken, files read, created or changed (with paths) and what changed in them, commands run and their outcome, errors met and how they were solved, what remains to do, and anything the person asked to remember. Leave out pleasantries and raw tool output. Do not answer the conversation; only summarize it.`

// summarize asks the model for a summary of the blocks, after prev (the summary of what
// came before them, "" for none), in as many requests as the window needs.
func (c compaction) summarize(ctx context.Context, prev string, blocks []string) (string, error) {
	chunkTokens := max(c.limit()-2*c.summaryTokens()-len(summarySystem)/charsPerToken-64, 256)
	chunkChars := chunkTokens * charsPerToken
	summary := prev
	for len(blocks) > 0 {
		var chunk strings.Builder
		for len(blocks) > 0 {
			b := blocks[0]
			if chunk.Len() > 0 && chunk.Len()+len(b)+1 > chunkChars {
				break
			}
			if len(b) > chunkChars {
				b = b[:chunkChars]
			}
			chunk.WriteString(b)
			chunk.WriteString("\n")
			blocks = blocks[1:]
		}
		text := "Conversation to summarize:\n\n" + chunk.String()
		if summary != "" {
			text = "Summary of what came before:\n" + summary + "\n\n" + text + "\nWrite one summary of both."
		}
		s, err := c.prov.Stream(ctx, provider.Request{Model: c.model, System: summarySystem, MaxTokens: c.summaryTokens(),
			Messages: []provider.Message{{Role: provider.RoleUser, Text: text}}})
		if err != nil {
			return "", err
		}
		res, err := provider.Collect(s)
		if err != nil {
			return "", err
		}
		out := strings.TrimSpace(res.Text)
		if out == "" {
			return "", errors.New("the model gave an empty summary")
		}
		if max := c.summaryTokens() * charsPerToken; len(out) > max {
			out = strings.ToValidUTF8(out[:max], "")
		}
		summary = out
	}
	return summary, nil
}

// run summarizes what plan chooses of history and returns the compaction message to store
// (not stored yet); ErrNothingToCompact when there is nothing to summarize.
func (c compaction) run(ctx context.Context, sessionID string, history []store.Message, tokensBefore int, manual bool) (store.Message, error) {
	idx := c.plan(history)
	if len(idx) == 0 {
		return store.Message{}, fmt.Errorf("%w: the recent messages are all that is left to send", ErrNothingToCompact)
	}
	prev, _, _ := lastCompaction(history)
	summary, err := c.summarize(ctx, prev, render(history, idx))
	if err != nil {
		return store.Message{}, fmt.Errorf("summarize %d messages: %w", len(idx), err)
	}
	removed := 0
	for _, i := range idx {
		msgs, _, _ := transcript([]store.Message{history[i]})
		for _, m := range msgs {
			removed += messageTokens(m)
		}
	}
	info := store.CompactionInfo{UpToSeq: history[idx[len(idx)-1]].Seq, Messages: len(idx), TokensBefore: tokensBefore,
		TokensAfter: max(tokensBefore-removed+(len(summary)-len(prev))/charsPerToken, 0), Manual: manual}
	args, _ := json.Marshal(info)
	return store.Message{SessionID: sessionID, Role: store.RoleSystem, Status: store.StatusComplete,
		Parts: []store.Part{{Kind: store.PartCompaction, Status: store.StatusComplete, Text: summary, Args: string(args)}}}, nil
}

// storeCompaction is the write of a compaction message; stored receives it as stored.
func storeCompaction(m store.Message, stored *store.Message) op {
	return func(ctx context.Context, tx *store.Tx) ([]store.NewEvent, error) {
		sm, err := tx.AppendMessage(ctx, m)
		if err != nil {
			return nil, fmt.Errorf("store the compaction: %w", err)
		}
		*stored = sm
		return []store.NewEvent{messageCreated(sm)}, nil
	}
}

// windowOf is the context window of the session's model, 0 when unknown: the configured
// one, or what a refusal taught when that is less (or nothing is configured).
func (h *Harness) windowOf(providerName, model string) int {
	w := 0
	if cw, ok := h.opts.Models.(ContextWindows); ok {
		w = cw.ContextWindow(providerName, model)
	}
	if l := h.windows.get(providerName, model); l > 0 && (w == 0 || l < w) {
		w = l
	}
	return w
}

// fit makes req fit the turn's context window: old tool results pruned, then older
// messages summarized (storing the compaction with pend, the writes waiting, which are then
// committed). failed is the estimate of a request the provider refused as too long (0 if
// none): then compaction is forced, to fit under it when the window is unknown. It returns
// the writes still waiting.
func (t *turn) fit(req *provider.Request, base string, pend ops, failed int) (ops, error) {
	window := t.window
	if failed > 0 && (window == 0 || failed < window) {
		window = failed
	}
	if window == 0 {
		return pend, nil
	}
	c := compaction{prov: t.prov, model: t.model, window: window}
	est := EstimateTokens(*req)
	if failed == 0 && est <= c.limit() {
		return pend, nil
	}
	keep := keepFrom(req.Messages, window*keepPercent/100)
	if pruned := prune(req.Messages, keep, t.keepResult); failed == 0 && pruned > 0 {
		if after := EstimateTokens(*req); after <= c.limit() {
			t.h.log.Info("pruned old tool results to fit the context window", "session", t.sessionID, "results", pruned,
				"tokens", est, "after", after, "window", window)
			return pend, nil
		}
	}
	t.preCompactHooks()
	m, err := c.run(t.ctx, t.sessionID, t.history, est, false)
	if err != nil && !errors.Is(err, ErrNothingToCompact) {
		return pend, fmt.Errorf("the conversation (about %d tokens) no longer fits the model's context window of %d tokens, and compacting it failed: %w", est, window, err)
	}
	if err == nil {
		var stored store.Message
		if err := t.ev.commit(t.wctx, append(pend, storeCompaction(m, &stored))); err != nil {
			return nil, err
		}
		pend = nil
		// What the compaction summarized is not sent again: the turn lets it go.
		t.history = liveTail(append(t.history, stored))
		var seals ops
		req.Messages, req.System, seals = t.request(base)
		pend = append(pend, seals...)
		prune(req.Messages, keepFrom(req.Messages, window*keepPercent/100), t.keepResult)
	}
	if after := EstimateTokens(*req); after > c.limit() {
		// Last resort: every tool result but the last message's is pruned.
		prune(req.Messages, len(req.Messages)-1, t.keepResult)
		if after = EstimateTokens(*req); after > c.limit() {
			return pend, fmt.Errorf("the request takes about %d tokens even compacted, more than %d%% of the model's context window of %d tokens: the system prompt, the tools offered (%d) and the last message take too much; start a new session, turn tools off, or give the provider a larger contextWindow",
				after, compactAtPercent, window, len(req.Tools))
		}
	}
	return pend, nil
}

// ResultKeeper keeps a tool result's whole text in the session's temporary folder and says
// where (*host.Host): a result pruned from a request is then named, not lost to the model.
type ResultKeeper interface {
	KeepResult(workspaceID, sessionID, callID, text string) (string, error)
}

// keepResult keeps a pruned result through the harness's tools when they can; "" when
// they cannot or writing failed (the note then says to call the tool again).
func (t *turn) keepResult(callID, text string) string {
	k, ok := t.h.opts.Tools.(ResultKeeper)
	if !ok || callID == "" {
		return ""
	}
	path, err := k.KeepResult(t.session.WorkspaceID, t.sessionID, callID, text)
	if err != nil {
		t.h.log.Warn("a pruned tool result could not be kept", "session", t.sessionID, "call", callID, "error", err)
		return ""
	}
	return path
}

// Compact summarizes the session's older messages now, as a person's /compact asks,
// keeping whole the recent ones that fit in keepPercent of what the conversation takes
// today. It returns what the stored compaction replaced. ErrBusy while a turn runs;
// ErrNothingToCompact when too few messages are left to summarize.
func (h *Harness) Compact(ctx context.Context, sessionID string) (store.CompactionInfo, error) {
	if err := h.reserve(ctx, sessionID); err != nil {
		return store.CompactionInfo{}, err
	}
	defer h.release(sessionID, nil)
	// Close ends a compaction as it ends turns.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(h.base, func() { cancel(errClosing) })
	defer stop()

	sess, ws, err := h.opts.Store.SessionWorkspace(ctx, sessionID)
	if err != nil {
		return store.CompactionInfo{}, fmt.Errorf("compact: %w", err)
	}
	prov, model, err := h.opts.Models.Model(ctx, sess.Provider, sess.Model)
	if err != nil {
		return store.CompactionInfo{}, fmt.Errorf("compact session %s: model %q of provider %q: %w", sessionID, sess.Model, sess.Provider, err)
	}
	if prov == nil {
		return store.CompactionInfo{}, fmt.Errorf("compact session %s: no provider named %q is configured", sessionID, sess.Provider)
	}
	h.hist.take(sessionID) // read from the store; kept again below
	history, err := h.opts.Store.LiveMessages(ctx, sessionID)
	if err != nil {
		return store.CompactionInfo{}, fmt.Errorf("compact session %s: read the transcript: %w", sessionID, err)
	}
	msgs, extra, _ := transcript(history)
	req := provider.Request{Model: model, System: strings.Join(append([]string{h.systemPrompt()}, extra...), "\n\n"),
		Messages: msgs, Tools: h.offered(ws.ID).ListForLLM()}
	est := EstimateTokens(req)
	window := h.windowOf(sess.Provider, model)
	if window == 0 {
		window = max(est, 8*1024)
	}
	msgTokens := 0
	for _, m := range msgs {
		msgTokens += messageTokens(m)
	}
	c := compaction{prov: prov, model: model, window: window, keep: msgTokens * keepPercent / 100}
	if err := h.manualPreCompactHooks(ctx, sessionID, host.Workspace{ID: ws.ID, Path: ws.Path, Allowed: ws.AllowedPaths}); err != nil {
		return store.CompactionInfo{}, fmt.Errorf("compact session %s: the PreCompact hooks: %w", sessionID, err)
	}
	m, err := c.run(ctx, sessionID, history, est, true)
	if err != nil {
		return store.CompactionInfo{}, fmt.Errorf("compact session %s: %w", sessionID, err)
	}
	var stored store.Message
	if err := h.emitter(sessionID).commit(context.WithoutCancel(ctx), ops{storeCompaction(m, &stored)}); err != nil {
		return store.CompactionInfo{}, fmt.Errorf("compact session %s: %w", sessionID, err)
	}
	h.hist.put(sessionID, append(history, stored))
	var info store.CompactionInfo
	_ = json.Unmarshal([]byte(stored.Parts[0].Args), &info)
	return info, nil
}
