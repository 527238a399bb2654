package builtin_test

import (
	"encoding/json"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/tool"
)

func jsonUnmarshal(raw []byte, v any) error { return json.Unmarshal(raw, v) }

func hostCall(e *env, name, args string, l *tool.Ledger) host.Call {
	return host.Call{Tool: name, Args: json.RawMessage(args), SessionID: "s1",
		Workspace: host.Workspace{ID: "w1", Path: e.ws}, Session: e.session, Asker: e.asker, Ledger: l}
}
