package ask

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/tool"
)

// ErrInvalidAsk marks an ask the tool built wrong; the tool receives it as its error.
var ErrInvalidAsk = errors.New("invalid ask")

// ErrInvalidAnswer marks an answer whose shape is not what the ask type promises the tool.
var ErrInvalidAnswer = errors.New("invalid answer")

// Broker stands between one call's ctx.ask and whoever answers: it rejects malformed asks,
// answers permissions already granted without asking, records the grants a person gives, and
// checks every answer's shape. The host builds one per call and closes it when the call
// settles. Safe for concurrent use.
type Broker struct {
	asker  tool.Asker
	grants *Grants
	call   Call
}

var _ tool.Asker = (*Broker)(nil)

// BrokerOptions is what the host knows when a call starts: who answers, the host's grants,
// and the call facts grants are scoped by.
type BrokerOptions struct {
	Asker  tool.Asker // answers what grants do not; nil refuses every ask
	Grants *Grants    // shared by every call of the host; nil remembers only within this call

	Tool        string // the tool's name
	ToolVersion string // hash of the tool version; a changed tool asks again
	CallID      string // empty for a detached call: the broker invents a unique one
	SessionID   string
	WorkspaceID string // when empty, Workspace names the workspace for workspace grants
	Workspace   string // absolute workspace path; relative ask paths resolve against it
	Home        string // what "~" means in ask paths
	// Protected are paths only a person may grant (jean2's home, credential folders); see
	// Assess.
	Protected []string
	// TempDir is the session's temporary folder (see Call.TempDir).
	TempDir string
}

// NewBroker returns the broker of one call. A call without a CallID (a detached run) gets a
// unique one, so its once grants stay its own.
func NewBroker(opts BrokerOptions) *Broker {
	b := &Broker{asker: opts.Asker, grants: opts.Grants, call: Call{
		Tool: opts.Tool, ToolVersion: opts.ToolVersion, CallID: opts.CallID, SessionID: opts.SessionID,
		WorkspaceID: opts.WorkspaceID, Workspace: opts.Workspace, Home: opts.Home,
		Protected: opts.Protected, TempDir: opts.TempDir,
	}}
	if b.asker == nil {
		b.asker = Refuse{}
	}
	if b.grants == nil {
		b.grants = NewGrants(nil)
	}
	if b.call.CallID == "" {
		b.call.CallID = newID("detached_")
	}
	return b
}

// Call returns the facts the broker scopes grants by.
func (b *Broker) Call() Call { return b.call }

// Close forgets the call's once grants. Asks after Close still work, but their once grants
// are not remembered past this point either way.
func (b *Broker) Close() { b.grants.EndCall(b.call.CallID) }

// Covers reports whether this call's granted permissions cover the file at path, for
// writing when write is set (see Grants.Covers). toolfs asks it before touching a path that
// needs approval.
func (b *Broker) Covers(path string, write bool) bool {
	return b.grants.Covers(b.call, path, write)
}

// Ask answers one ctx.ask of the call.
func (b *Broker) Ask(ctx context.Context, a tool.Ask) (json.RawMessage, error) {
	if err := checkAsk(a); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidAsk, err)
	}
	ctx = ContextWithCall(ctx, b.call)
	if a.Type == tool.AskPermission {
		granted, err := b.permission(ctx, a)
		if err != nil {
			return nil, err
		}
		return json.Marshal(granted)
	}
	answer, err := b.asker.Ask(ctx, a)
	if err != nil {
		return nil, err
	}
	if d := defaultOf(a); d != nil && a.Type == tool.AskText && bytes.Equal(bytes.TrimSpace(answer), []byte(`""`)) {
		answer = d
	}
	v, err := checkAnswer(a, answer)
	if err != nil {
		return nil, fmt.Errorf("%s ask %q: %w: %w; expected %s", a.Type, a.Question, ErrInvalidAnswer, err, expected(a))
	}
	return v, nil
}

func (b *Broker) permission(ctx context.Context, a tool.Ask) (bool, error) {
	// The host's risk, not the tool's label, is what grants are recorded and looked up
	// with and what a person is shown (a tool cannot call ~/.env "low").
	a.Risk = Assess(b.call, a).Risk
	if inTempDir(b.call, a) {
		// The call may already read and write there (ctx.fs and the sandbox leave the
		// session's folder open): asking would only trouble the person. No grant is
		// recorded, so the answer opens nothing else (a link planted in the folder that
		// leads out is judged where it leads, by inTempDir and by toolfs).
		return true, nil
	}
	_, ok := b.grants.Lookup(b.call, a)
	if !ok && b.grants.shared {
		// Another instance may have been given the grant a moment ago: read the store
		// before troubling a person (a failure to read only means asking).
		if n, err := b.grants.Adopt(ctx); err != nil {
			b.grants.logger.Warn("read the grants given on other instances", "tool", b.call.Tool, "call", b.call.CallID, "err", err)
		} else if n > 0 {
			_, ok = b.grants.Lookup(b.call, a)
		}
	}
	if ok {
		if OpensReads(a) {
			// A permission that names no path opens reads only inside the call that got it
			// (see Grants.Covers); granting it again here gives this call the same, or the
			// tool would be told yes and then refused by toolfs.
			b.record(ctx, a, tool.DurationOnce)
		}
		return true, nil
	}
	d, err := b.decide(ctx, a)
	if err != nil {
		return false, err
	}
	if d.Granted {
		b.record(ctx, a, d.Duration)
	} else {
		b.grants.Refuse(b.call, a)
	}
	return d.Granted, nil
}

// decide asks the asker; one that cannot say how long grants for this call only.
func (b *Broker) decide(ctx context.Context, a tool.Ask) (Decision, error) {
	if pa, ok := b.asker.(PermissionAsker); ok {
		d, err := pa.AskPermission(ctx, a)
		if err != nil {
			return Decision{}, err
		}
		if !d.Granted {
			return Decision{}, nil
		}
		switch d.Duration {
		case "":
			d.Duration = tool.DurationOnce
		case tool.DurationOnce, tool.DurationSession, tool.DurationWorkspace:
		default:
			return Decision{}, fmt.Errorf("permission ask %q: %w: duration %q is not one of once, session, workspace", a.Question, ErrInvalidAnswer, d.Duration)
		}
		return d, nil
	}
	answer, err := b.asker.Ask(ctx, a)
	if err != nil {
		return Decision{}, err
	}
	d, err := decisionFrom(bytes.TrimSpace(answer), tool.DurationOnce)
	if err != nil {
		return Decision{}, fmt.Errorf(`permission ask %q: %w: %w; expected true, false or {"granted":true,"duration":"once|session|workspace"}`, a.Question, ErrInvalidAnswer, err)
	}
	return d, nil
}

// record remembers a grant. A store failure does not take the person's yes back: the grant
// holds in memory, and the failure is logged for the operator.
func (b *Broker) record(ctx context.Context, a tool.Ask, duration string) {
	if _, err := b.grants.Record(ctx, b.call, a, duration); err != nil {
		b.grants.logger.Warn("grant not persisted", "tool", b.call.Tool, "call", b.call.CallID, "err", err)
	}
}

// inTempDir reports whether a is a file permission whose every path (its paths and its
// "file:" patterns) lies, as written and where it really leads, in the call's session
// folder; false for an ask that names no path.
func inTempDir(c Call, a tool.Ask) bool {
	if c.TempDir == "" || !filepath.IsAbs(c.TempDir) || (a.Resource != "file" && a.Resource != "") {
		return false
	}
	temp := filepath.Clean(c.TempDir)
	realTemp := policy.Real(temp)
	paths := resolvePaths(c, a.Paths)
	for _, pat := range a.Patterns {
		if fp, ok := strings.CutPrefix(pat, "file:"); ok && (filepath.IsAbs(fp) || fp == "~" || strings.HasPrefix(fp, "~/")) {
			paths = append(paths, policy.Resolve(fp, c.Workspace, c.Home))
		}
	}
	if len(paths) == 0 {
		return false
	}
	for _, p := range paths {
		if !filepath.IsAbs(p) || !(policy.Within(p, temp) || policy.Within(p, realTemp)) || !policy.Within(policy.Real(p), realTemp) {
			return false
		}
	}
	return true
}
