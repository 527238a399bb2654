package ask

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jean2/jean2/tool"
)

// Call is what the host knows about the call that asks: the facts a grant is scoped by.
type Call struct {
	Tool        string // the tool's name
	ToolVersion string // hash of the tool version; a changed tool asks again
	CallID      string // the provider's tool-call id; a Broker invents one when empty
	SessionID   string
	WorkspaceID string // when empty, the workspace path stands in for it
	Workspace   string // absolute workspace path; relative ask paths resolve against it
	Home        string // what "~" means in ask paths
	// Protected are paths no unattended policy grants, nor anything in them (jean2's home,
	// credential folders); see Assess.
	Protected []string
	// TempDir is the session's temporary folder, open to the call without asking (ctx.fs
	// and the sandbox let it read and write there): a permission for paths in it is granted
	// without asking anyone and without recording a grant. "" when the call has none.
	TempDir string
}

// workspaceKey names the workspace a workspace-duration grant belongs to. A workspace without
// an id is named by its path, so grants still cannot leak into another workspace.
func (c Call) workspaceKey() string {
	if c.WorkspaceID != "" {
		return c.WorkspaceID
	}
	if c.Workspace != "" {
		return "path:" + c.Workspace
	}
	return ""
}

// Decision is the answer to a permission ask: whether it was granted, and for how long the
// person wants it remembered (once, session or workspace; empty when denied).
type Decision struct {
	Granted  bool   `json:"granted"`
	Duration string `json:"duration,omitempty"`
}

// PermissionAsker is an asker that can say how long a granted permission should last. The
// Broker prefers it over Ask for permission asks; an asker that only answers true or false
// is taken to grant for this call only.
type PermissionAsker interface {
	AskPermission(ctx context.Context, a tool.Ask) (Decision, error)
}

// decisionFrom reads a permission answer given as a boolean or as {"granted","duration"}.
// A bare true lasts for fallback, which callers pick by how much the answerer could say.
func decisionFrom(answer json.RawMessage, fallback string) (Decision, error) {
	var granted bool
	if err := json.Unmarshal(answer, &granted); err == nil {
		if !granted {
			return Decision{}, nil
		}
		return Decision{Granted: true, Duration: fallback}, nil
	}
	var d struct {
		Granted  *bool  `json:"granted"`
		Duration string `json:"duration"`
	}
	if err := json.Unmarshal(answer, &d); err != nil || d.Granted == nil {
		return Decision{}, fmt.Errorf("answer %s is not a permission answer", clip(answer))
	}
	if !*d.Granted {
		return Decision{}, nil
	}
	switch d.Duration {
	case "":
		d.Duration = fallback
	case tool.DurationOnce, tool.DurationSession, tool.DurationWorkspace:
	default:
		return Decision{}, fmt.Errorf("permission duration %q is not one of once, session, workspace", d.Duration)
	}
	return Decision{Granted: true, Duration: d.Duration}, nil
}

type callKey struct{}

// ContextWithCall attaches the asking call's facts to ctx, so an asker can show a person which
// tool is asking. The Broker does this before it passes an ask on.
func ContextWithCall(ctx context.Context, c Call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// CallFrom returns the call facts attached by ContextWithCall.
func CallFrom(ctx context.Context) (Call, bool) {
	c, ok := ctx.Value(callKey{}).(Call)
	return c, ok
}

// clip shortens a JSON text for an error message.
func clip(b []byte) string {
	const max = 200
	if len(b) == 0 {
		return "nothing"
	}
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
