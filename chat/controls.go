package chat

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/jean2/jean2/internal/termtext"
	"github.com/jean2/jean2/store"
)

// The chat's conversation controls (docs/api.md "Conversation controls"): /edit sends the
// last message of yours again with new text, /retry answers it again, /fork makes a new
// session with the conversation so far.

// stoppedByUser reports whether an error says that a person stopped the turn: a stopped
// call or answer is shown as stopped, not as a failure.
func stoppedByUser(msg string) bool {
	return strings.Contains(msg, "stopped by the user")
}

// lastUserMessage is the session's last message of a person.
func (u *chatUI) lastUserMessage(ctx context.Context) (store.Message, error) {
	var out struct {
		Messages []store.Message `json:"messages"`
	}
	if err := u.api.Call(ctx, http.MethodGet, "/api/sessions/"+url.PathEscape(u.ses.ID)+"/messages", nil, &out); err != nil {
		return store.Message{}, err
	}
	for i := len(out.Messages) - 1; i >= 0; i-- {
		if out.Messages[i].Role == store.RoleUser {
			return out.Messages[i], nil
		}
	}
	return store.Message{}, fmt.Errorf("this session has no message of yours yet")
}

// controlCommand runs /edit TEXT, /retry and /fork; ok is false for another line.
func (u *chatUI) controlCommand(ctx context.Context, trimmed string) (ok bool) {
	cmd, arg, _ := strings.Cut(trimmed, " ")
	switch cmd {
	case "/edit", "/retry":
	case "/fork":
		u.fork(ctx)
		return true
	default:
		return false
	}
	if u.running {
		u.println(u.st.dim("(a turn is running: wait for it to end, or /stop it first)"))
		u.prompt()
		return true
	}
	restore := strings.HasSuffix(arg, " --restore") || arg == "--restore"
	arg = strings.TrimSpace(strings.TrimSuffix(arg, "--restore"))
	var path string
	body := map[string]any{"restore": restore}
	if cmd == "/retry" {
		path = "/api/sessions/" + url.PathEscape(u.ses.ID) + "/regenerate"
	} else {
		if arg == "" {
			u.println(u.st.dim("(/edit NEW TEXT sends your last message again as NEW TEXT; add --restore to put the files back first)"))
			u.prompt()
			return true
		}
		m, err := u.lastUserMessage(ctx)
		if err != nil {
			u.println(u.st.red("Cannot edit: " + err.Error()))
			u.prompt()
			return true
		}
		path = "/api/sessions/" + url.PathEscape(u.ses.ID) + "/messages/" + url.PathEscape(m.ID) + "/resend"
		body["text"] = arg
	}
	var out struct {
		Cut struct {
			Count int `json:"count"`
		} `json:"cut"`
	}
	if err := u.api.Call(ctx, http.MethodPost, path, body, &out); err != nil {
		u.println(u.st.red("Could not send it again: " + err.Error()))
		if cmd == "/edit" {
			u.println(u.st.dim("(your text: " + clip(termtext.Line(arg), 200) + ")"))
		}
		u.prompt()
		return true
	}
	u.running = true
	if cmd == "/edit" {
		u.own = append(u.own, arg)
	} else if m, err := u.lastUserMessage(ctx); err == nil {
		u.own = append(u.own, m.Content)
	}
	u.println(u.st.dim(fmt.Sprintf("(%d message%s removed; going on from there%s)", out.Cut.Count, plural(out.Cut.Count), map[bool]string{true: ", files restored", false: ""}[restore])))
	return true
}

// fork makes a new session holding this conversation up to its last message.
func (u *chatUI) fork(ctx context.Context) {
	var out struct {
		Messages []store.Message `json:"messages"`
	}
	if err := u.api.Call(ctx, http.MethodGet, "/api/sessions/"+url.PathEscape(u.ses.ID)+"/messages", nil, &out); err != nil || len(out.Messages) == 0 {
		u.println(u.st.dim("(nothing to fork yet)"))
		u.prompt()
		return
	}
	last := out.Messages[len(out.Messages)-1]
	var ses session
	if err := u.api.Call(ctx, http.MethodPost, "/api/sessions/"+url.PathEscape(u.ses.ID)+"/fork", map[string]any{"messageId": last.ID}, &ses); err != nil {
		u.println(u.st.red("Could not fork: " + err.Error()))
		u.prompt()
		return
	}
	from := u.ses.ID
	if u.running {
		// The turn here goes on; the person stays to see it.
		u.println(u.st.cyan(fmt.Sprintf("Forked as session %s: jean2 chat --session %s goes on there.", ses.ID, ses.ID)))
		u.prompt()
		return
	}
	u.println(u.st.cyan(fmt.Sprintf("Forked as session %s; going on there (jean2 chat --session %s comes back here).", ses.ID, from)))
	u.switchTo(ctx, ses)
	u.prompt()
}

// switchTo makes ses the chat's session: its events are followed from now on, and what was
// waiting here (queued lines, asks) stays with the old session.
func (u *chatUI) switchTo(ctx context.Context, ses session) {
	if err := u.api.Call(ctx, http.MethodGet, "/api/sessions/"+url.PathEscape(ses.ID), nil, &ses); err != nil {
		u.println(u.st.red("Could not open session " + ses.ID + ": " + err.Error()))
		return
	}
	u.unfollow()
	u.ses = ses
	u.own, u.queued, u.askQueue = nil, nil, nil
	u.lastText = ""
	u.header()
	u.follow(ctx, ses.LastSeq)
}
