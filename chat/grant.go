package chat

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/jean2/jean2/internal/termtext"
	"github.com/jean2/jean2/sandbox"
)

// grantHintLines tells, under a call jean2's sandbox refused, how to grant from the chat
// what the refusal names for that tool (sandbox.GrantHints): one /grant line each.
func (u *chatUI) grantHintLines(toolName, message, toolHash string) {
	hints := sandbox.GrantHints(message, toolName)
	if len(hints) > 0 && toolHash != "" {
		if u.refused == nil {
			u.refused = map[string]string{}
		}
		u.refused[toolName] = toolHash
	}
	for _, spec := range hints {
		u.println("    " + u.st.dim("to allow it: /grant "+termtext.Line(toolName)+" "+termtext.Line(spec)))
	}
}

// grant is /grant NAME SPEC: a person gives the tool a power it does not declare (POST
// /api/tools/{name}/grant), as `jean2 tools approve NAME --grant SPEC` does: to the version
// whose refusal the chat showed last, so a tool changed since is refused (409), else to the
// serving version.
// SPEC is the rest of the line, so a path may hold spaces.
func (u *chatUI) grant(ctx context.Context, arg string) {
	name, spec, _ := strings.Cut(strings.TrimSpace(arg), " ")
	spec = strings.TrimSpace(spec)
	if name == "" || spec == "" {
		u.println(u.st.dim("(give the tool and the power: /grant NAME childProcess, network=HOST, read=PATH, write=PATH or data=TOOL; a refused call says which)"))
		return
	}
	body := map[string]any{"grants": []string{spec}}
	if hash := u.refused[name]; hash != "" {
		body["hash"] = hash // the version whose refusal was shown: not one that replaced it
	}
	err := u.api.Call(ctx, http.MethodPost, "/api/tools/"+url.PathEscape(name)+"/grant", body, nil)
	if err != nil {
		u.println(u.st.red("jean2 chat: grant: " + err.Error()))
		return
	}
	u.println(u.st.dim("Granted to this version of " + termtext.Line(name) + ": " + termtext.Line(spec) +
		". jean2's own folder and credential folders stay closed; `jean2 tools approve " + termtext.Line(name) + " --revoke` takes it back."))
}
