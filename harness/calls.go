package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
)

// plan splits the calls of an answer (parts, in stream order) into the groups that run
// one after another: a single call, or a run of consecutive calls of read-only tools, or of
// task calls (subagents), which run together. It reports whether every call is of an interactive tool (such a round does
// not spend the work budget).
func (t *turn) plan(parts []store.Part, calls []int) (groups [][]int, interactiveOnly bool) {
	reg := t.h.opts.Tools.Registry()
	together := make([]groupKind, len(calls))
	interactiveOnly = true
	for i, pi := range calls {
		tl, ok := reg.Lookup(parts[pi].ToolName)
		if !ok {
			interactiveOnly = false
			continue
		}
		def := tl.Definition()
		together[i] = kindOf(tl, def)
		if !def.Interactive {
			interactiveOnly = false
		}
	}
	for i := 0; i < len(calls); {
		j := i + 1
		for together[i] != runsAlone && j < len(calls) && together[j] == together[i] {
			j++
		}
		groups = append(groups, calls[i:j])
		i = j
	}
	return groups, interactiveOnly
}

// startCall marks a call running, or seals it when its arguments do not parse (it never
// runs); it reports whether the call is to run.
func startCall(p *store.Part) bool {
	if err := checkArgs(p.Args); err != nil {
		sealCall(p, err.Error())
		return false
	}
	p.Status = store.StatusRunning
	return true
}

// runCalls runs the calls of one answer group after group (see plan). Stop is checked
// before each group; the calls it keeps from running are sealed. pend holds the answer's
// writes not yet committed; they are committed with the first group's start. A group's
// calls may have been started already (the answer was stored with them running, to save
// a write). It fails only when the calls' start could not be stored: they do not run then.
func (t *turn) runCalls(msg *store.Message, groups [][]int, ws host.Workspace, pend ops) error {
	// The snapshot of the workspace must be taken before anything can change it.
	t.snap.wait()
	if why := t.undoGate(); why != "" {
		var all []int
		for _, g := range groups {
			all = append(all, g...)
		}
		t.sealCalls(msg, all, "not run: "+why, append(t.takeCarry(), pend...))
		return errors.New(why)
	}
	for gi, group := range groups {
		if _, why, stop := t.stopped(); stop {
			var rest []int
			for _, g := range groups[gi:] {
				rest = append(rest, g...)
			}
			t.sealCalls(msg, rest, "interrupted: the turn was "+stopWord(why)+" before this call ran", append(t.takeCarry(), pend...))
			return nil
		}
		var run []int
		for _, pi := range group {
			p := &msg.Parts[pi]
			if p.Status == store.StatusPending {
				startCall(p)
				pend.add(updatePartOp(*p, "store the start of call "+p.CallID))
			} else {
				// Stored already when the answer was stored with it started; clients
				// still get the call's own part.updated (running, or the error of its
				// arguments).
				pend.events(partUpdated(*p))
			}
			if p.Status == store.StatusRunning {
				run = append(run, pi)
			}
		}
		// With the previous group's outcomes.
		batch := append(t.takeCarry(), pend...)
		if err := t.ev.commit(t.wctx, batch); err != nil {
			if store.Fault(err) != "" {
				t.keepUnstarted(msg, run, batch, err)
			}
			return fmt.Errorf("could not store the start of the calls, so they did not run: %w", err)
		}
		pend = nil
		if len(run) == 1 {
			t.runCall(msg, run[0], ws)
		} else if len(run) > 1 {
			t.runParallel(msg, run, ws)
		}
	}
	// The last group's outcomes stay in t.carry, for the next answer's first flush.
	if err := t.ev.commit(t.wctx, pend); err != nil {
		return fmt.Errorf("store the answer: %w", err)
	}
	return nil
}

// keepUnstarted keeps, for the turn's end, a batch the database could not take for a fault
// of its own (the last calls' outcomes, the answer, the start of the calls in run), with
// those calls sealed: they did not run.
func (t *turn) keepUnstarted(msg *store.Message, run []int, batch ops, err error) {
	for _, pi := range run {
		p := &msg.Parts[pi]
		sealCall(p, "not run: the database could not store its start ("+store.Fault(err)+")")
		batch.add(updatePartOp(*p, "seal call "+p.CallID))
	}
	t.keepForEnd(batch)
}

func stopWord(why string) string {
	if why == errClosing.Error() {
		return "interrupted (" + why + ")"
	}
	return "stopped"
}

// runParallel runs read-only calls together, at most MaxParallel at once.
func (t *turn) runParallel(msg *store.Message, run []int, ws host.Workspace) {
	sem := make(chan struct{}, t.h.opts.MaxParallel)
	var wg sync.WaitGroup
	for _, pi := range run {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			t.runCall(msg, pi, ws)
		}()
	}
	wg.Wait()
}

// runCall runs one call whose part is marked running and stores its outcome. The call's
// context is linked to the turn's: a Stop reaches it until it settles.
func (t *turn) runCall(msg *store.Message, pi int, ws host.Workspace) {
	p := &msg.Parts[pi] // this goroutine's alone until the call settles
	callCtx, link := tool.LinkCallSignal(t.ctx)
	defer link.Release()
	var askers tool.Asker
	if a := t.h.opts.Askers; a != nil {
		askers = a.Asker(t.askSession())
	}
	msgID, partID, callID := msg.ID, p.ID, p.CallID
	out := t.invoke(callCtx, host.Call{
		Tool: p.ToolName, Args: json.RawMessage(p.Args), CallID: callID, SessionID: t.sessionID,
		Workspace: ws, Asker: askers, Ledger: t.ledger, Session: t.facts,
		Progress: func(pr tool.Progress) {
			t.ev.emit(t.wctx, newEvent(EventToolProgress, ToolProgress{MessageID: msgID, PartID: partID, CallID: callID, Progress: pr}))
		},
		Workspaces: &workspacePaths{t: t, workspaceID: ws.ID, callID: callID},
		LLM:        provider.ForTools(t.prov, t.model),
	}, func(args json.RawMessage) {
		// What runs is what the part shows, to the person now and in the transcript.
		p.Args = string(args)
		t.ev.emit(t.wctx, partUpdated(*p))
	})
	p.Result = out.ModelText
	p.ToolHash = out.ToolHash
	p.Visualization = out.Result.Visualization
	p.MediaType, p.Data = keptContent(out.Result.Content)
	p.Duration = out.Duration
	if out.Result.Success {
		p.Status, p.Error = store.StatusComplete, ""
	} else {
		p.Status, p.Error = store.StatusError, out.Result.Error
	}
	// Committed with the turn's next write, at the latest flushEvery into the next answer.
	t.carryOn(updatePartOp(*p, "store the outcome of call "+callID))
}

// sealCalls ends calls that will not run, with why, in one commit with pend.
func (t *turn) sealCalls(msg *store.Message, parts []int, why string, pend ops) {
	for _, pi := range parts {
		p := &msg.Parts[pi]
		sealCall(p, why)
		pend.add(updatePartOp(*p, "seal call "+p.CallID))
	}
	if err := t.ev.commit(t.wctx, pend); err != nil {
		t.h.log.Error("seal calls that will not run", "session", t.sessionID, "calls", len(parts), "error", err)
	}
}

// checkArgs refuses arguments that are not a JSON object, in words the model can act on.
func checkArgs(args string) error {
	trimmed := bytes.TrimSpace([]byte(args))
	if len(trimmed) == 0 {
		return fmt.Errorf("arguments are not valid JSON: they are empty; send an object matching the schema")
	}
	if !json.Valid(trimmed) {
		var v any
		err := json.Unmarshal(trimmed, &v)
		return fmt.Errorf("arguments are not valid JSON: %v; send an object matching the schema (you sent %s)", err, quoteStart(args, 200))
	}
	if trimmed[0] != '{' {
		return fmt.Errorf("arguments must be a JSON object, not %s; send an object matching the schema (you sent %s)", jsonKind(trimmed[0]), quoteStart(args, 200))
	}
	return nil
}

func jsonKind(first byte) string {
	switch first {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// quoteStart quotes the first n bytes of s (cut on a rune boundary), marking a cut.
func quoteStart(s string, n int) string {
	if len(s) <= n {
		return fmt.Sprintf("%q", s)
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q… (%d bytes in all)", s[:cut], len(s))
}

// argsForModel is what a call's arguments are sent back to the model as: verbatim when
// they are an object, else "{}" (some servers refuse a transcript whose arguments do not
// parse; the call's error result quotes what was sent).
func argsForModel(args string) string {
	if checkArgs(args) == nil {
		return args
	}
	return "{}"
}

// keptContent is what a tool part keeps of a result's content (store.ToolContentType): its
// images of the types models take, so a history replays them to the model. The rest is in
// the model's text already, and the images are in the visualization for people. The host
// has bounded them (host.ContentKeepBytes).
func keptContent(content []tool.Content) (string, []byte) {
	var images []tool.Content
	for _, c := range content {
		if c.Type == tool.ContentImage && slices.Contains(tool.ImageTypes, c.MIMEType) {
			images = append(images, c)
		}
	}
	if len(images) == 0 {
		return "", nil
	}
	raw, err := json.Marshal(images)
	if err != nil || len(raw) > store.MaxToolContentBytes {
		return "", nil
	}
	return store.ToolContentType, raw
}
