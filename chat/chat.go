// Package chat is jean2's terminal client (`jean2 chat`): a client of the jean2 server's
// HTTP API and event stream, like the web client. It streams the answer in, draws tool calls
// with their visualizations, answers the asks of tools inline, and runs the slash commands
// (compaction, conversation controls, restore, the model, sessions, search).
package chat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"time"

	"github.com/jean2/jean2/server"
	"github.com/jean2/jean2/store"
)

// Commands is the chat's help on its slash commands and keys, shown by /help and in the
// usage of `jean2 chat`.
const Commands = `In the chat:
  /agent     the workspace's agents (build, plan, agent files) and those that did not load;
             /agent NAME switches this session's agent; Tab then Enter on an empty line
             switches to the next (plan is read-only: edits and commands are refused)
  /goal C    set the session's goal: after each turn the model checks whether condition C
             is met and, while it is not, jean2 goes on (10 turns at most; /goal --turns N C
             sets the budget); /goal shows it, /goal off clears it, /stop ends it
  /compact   summarize the older messages now to free the model's context (long sessions
             are compacted by themselves when they near the model's context window)
  /model     the session's model and the provider's models; /model M switches to model M,
             /model P M to model M of provider P
  /tokens    the tokens this session used, by model, and their cost when prices are set
  /sessions  this workspace's sessions: title, date, the start of the last message
  /attach S U attach resource U of MCP server S to your next message (read when sent);
             /attach alone lists the connected servers' resources; /detach drops them
  /title T   rename the session (it is named after its first turn otherwise)
  /search W  list the sessions whose messages or title hold the words W
  /diff      what the latest turn that changed files changed, file by file, as diffs;
             /diff N the Nth such turn (numbered as /restore lists them)
  /grant N P give tool N's version power P it does not declare (childProcess, network=HOST,
             read=PATH, write=PATH, data=TOOL): a call jean2's sandbox refused says which
  /restore   list the turns that changed files and put files back as they were before one
  /edit TEXT send your last message again as TEXT, dropping what came after it
             (add --restore to put the files back as they were before it)
  /retry     answer your last message again (--restore as for /edit)
  /fork      a new session with this conversation so far; the chat goes on there
  /stop      stop the running turn (as Ctrl-C does)
  /help      this list
  /quit      leave (as Ctrl-D, or Ctrl-C twice within 2 seconds; also at a question)
  Ctrl-C     stop the running turn; a second Ctrl-C within 2 seconds leaves
  Ctrl-L     clear the screen and draw the session's latest messages again (what you had
             typed stays on the line)
`

// DefaultServer is where a client looks for the jean2 server when told nothing else.
const DefaultServer = "http://127.0.0.1:8742"

// Options say which server, workspace and session a chat uses, and where it reads and
// writes. The command fills them from its flags and environment.
type Options struct {
	// Server is the jean2 server's URL (CheckServerURL has accepted it).
	Server string
	// Token is the server's API token; "" for a server that requires none.
	Token string
	// Workspace is the absolute folder the agent works in, made a workspace of the server
	// when it is not one yet. "" goes on with Session's workspace (Session is then required).
	Workspace string
	// Session is an earlier session to go on with; "" starts a new one.
	Session string
	// Provider and Model set the session's model when not "".
	Provider, Model string
	// Agent switches the session to this agent (build, plan, an agent file's) when not "".
	Agent string

	// Rediscover, when not nil, says where the server runs now and its token ("" when
	// unknown): the chat asks while it reconnects to a server that went away, so that it
	// follows one that came back on another address.
	Rediscover func() (server, token string)

	// StartServer starts a server inside this process when none answers at a loopback
	// Server; nil means the chat never starts one (the person named the server).
	StartServer func(ctx context.Context) (*LocalServer, error)
	// ConfirmMCPTrust asks the person whether to trust a workspace's mcp.json, which starts
	// the commands listed; nil trusts nothing.
	ConfirmMCPTrust func(file, workspace string, commands []string) bool

	// Stdin is what the person types, read a line at a time until it ends (the chat ends
	// with it). Stdout shows the conversation; Stderr the chat's notices (Stdout when nil).
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Color draws with ANSI colours (a terminal without NO_COLOR).
	Color bool
	// Notify rings the terminal (BEL and OSC 9) when a turn that ran over 10 s ends or asks
	// (a terminal, without JEAN2_CHAT_NOTIFY=off).
	Notify bool
	// Desktop, when set, shows those notifications on the desktop instead of OSC 9 (the
	// bell still rings when Notify); if it fails, the chat says so once and falls back.
	Desktop DesktopNotifier
}

// DesktopNotifier shows a notification on the person's desktop (internal/desktop).
type DesktopNotifier interface {
	Notify(ctx context.Context, title, body string) error
}

// LocalServer is a jean2 server that runs inside the chat's process for as long as the
// chat lasts.
type LocalServer struct {
	URL    string
	Token  string
	SignIn string // a one-time address that signs a browser in to it
	Close  func() // stops it; the chat calls it as it ends
}

// UsageError says that the options named something that does not fit (a session of
// another workspace, a model its provider does not have): the command exits as for a
// mistake in how it was called.
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) error { return UsageError{fmt.Sprintf(format, args...)} }

// Run holds the conversation until the person leaves, the input ends or ctx ends. It owns
// os.Interrupt while it runs: the first Ctrl-C stops the turn, a second within 2 s leaves.
func Run(ctx context.Context, o Options) error {
	switch {
	case o.Workspace == "" && o.Session == "":
		return errors.New("chat: neither a workspace nor a session to open")
	case o.Stdin == nil || o.Stdout == nil:
		return errors.New("chat: Options.Stdin and Options.Stdout are required")
	case o.Stderr == nil:
		o.Stderr = o.Stdout
	}
	api, local, err := connect(ctx, "jean2 chat", o.Server, o.Token, o.StartServer, o.Stderr)
	if err != nil {
		return err
	}
	if local != nil {
		defer local.Close()
	}

	// Until the conversation is on screen, a database outage is said on stderr.
	api.onDatabase = func(down bool, words string) {
		if down {
			fmt.Fprintf(o.Stderr, "jean2 chat: %s\n", words)
		}
	}
	ses, ws, err := sessionFor(ctx, api, o.Workspace, o.Session)
	if err != nil {
		return err
	}
	if o.Provider != "" || o.Model != "" {
		if ses, err = setChatModel(ctx, api, ses, o.Provider, o.Model); err != nil {
			return usagef("--provider %q --model %q: %v", o.Provider, o.Model, err)
		}
	}
	if o.Agent != "" {
		if ses, err = setAgent(ctx, api, ses, o.Agent); err != nil {
			return usagef("--agent %q: %v", o.Agent, err)
		}
	}
	if err := askMCPTrust(ctx, o, api, ws); err != nil {
		return err
	}
	if local == nil {
		api.rediscover = o.Rediscover
	}
	ui := newChatUI(o, api, ses, ws, local != nil)
	return ui.run(ctx)
}

// connect returns a client of the server at base, or of one start starts inside this
// process when none answers at a loopback base (start nil: never). The caller closes local
// when it is not nil. cmd names the command in messages ("jean2 chat", "jean2 run").
func connect(ctx context.Context, cmd, base, token string, start func(context.Context) (*LocalServer, error), notices io.Writer) (api *Client, local *LocalServer, err error) {
	api = NewClient(base, token)
	hctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	_, err = api.health(hctx)
	cancel()
	if err == nil {
		if api.token == "" {
			return nil, nil, fmt.Errorf("the jean2 server at %s needs its API token, and there is none here: set JEAN2_TOKEN, or run %s where $JEAN2_HOME is the server's (its token file is $JEAN2_HOME/%s)", base, cmd, server.TokenFile)
		}
		return api, nil, nil
	}
	var ae *APIError
	if start == nil || errors.As(err, &ae) || !isLoopbackURL(base) {
		return nil, nil, fmt.Errorf("no jean2 server answers at %s: %w (start one with jean2 serve, or leave --server out to have %s start its own)", base, err, cmd)
	}
	if local, err = start(ctx); err != nil {
		return nil, nil, fmt.Errorf("no jean2 server answers at %s, and starting one here failed: %w", base, err)
	}
	fmt.Fprintf(notices, "%s: no server at %s; started one here at %s until it ends (web client: %s)\n", cmd, base, local.URL, local.SignIn)
	return NewClient(local.URL, local.Token), local, nil
}

// CheckServerURL says what is wrong with a server URL a person gave, if anything.
func CheckServerURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("use an http:// or https:// URL, e.g. http://127.0.0.1:8742")
	}
	if u.Host == "" {
		return errors.New("the URL names no host")
	}
	if u.Path != "" && u.Path != "/" {
		return errors.New("give the server's root, without a path")
	}
	return nil
}

func isLoopbackURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && server.IsLoopback(u.Hostname())
}

// sessionFor finds or makes the workspace of dir and makes a session in it, or finds
// the session named by sessionID (which must be in dir's workspace when dir is given).
func sessionFor(ctx context.Context, api *Client, dir, sessionID string) (session, store.Workspace, error) {
	var ses session
	var ws store.Workspace
	if sessionID != "" {
		if err := api.Call(ctx, http.MethodGet, "/api/sessions/"+url.PathEscape(sessionID), nil, &ses); err != nil {
			return ses, ws, fmt.Errorf("session %s: %w", sessionID, err)
		}
		if err := api.Call(ctx, http.MethodGet, "/api/workspaces/"+url.PathEscape(ses.WorkspaceID), nil, &ws); err != nil {
			return ses, ws, fmt.Errorf("the workspace of session %s: %w", sessionID, err)
		}
		if dir != "" && filepath.Clean(ws.Path) != filepath.Clean(dir) {
			return ses, ws, usagef("session %s belongs to the workspace %s, not %s: leave --workspace out to go on with it", sessionID, ws.Path, dir)
		}
		return ses, ws, nil
	}
	ws, err := workspaceFor(ctx, api, dir)
	if err != nil {
		return ses, ws, err
	}
	if err := api.Call(ctx, http.MethodPost, "/api/workspaces/"+url.PathEscape(ws.ID)+"/sessions", map[string]any{}, &ses); err != nil {
		return ses, ws, fmt.Errorf("start a session in %s: %w", ws.Path, err)
	}
	return ses, ws, nil
}

// workspaceFor returns the server's workspace of dir, making it when there is none.
func workspaceFor(ctx context.Context, api *Client, dir string) (store.Workspace, error) {
	find := func() (store.Workspace, bool, error) {
		var list struct {
			Workspaces []store.Workspace `json:"workspaces"`
		}
		if err := api.Call(ctx, http.MethodGet, "/api/workspaces", nil, &list); err != nil {
			return store.Workspace{}, false, fmt.Errorf("list the server's workspaces: %w", err)
		}
		real, _ := filepath.EvalSymlinks(dir)
		for _, w := range list.Workspaces {
			if p := filepath.Clean(w.Path); p == dir || p == real {
				return w, true, nil
			}
		}
		return store.Workspace{}, false, nil
	}
	if w, ok, err := find(); err != nil || ok {
		return w, err
	}
	var w store.Workspace
	err := api.Call(ctx, http.MethodPost, "/api/workspaces", map[string]any{"path": dir}, &w)
	if _, conflict := isAPIError(err, "conflict"); conflict {
		// Made meanwhile by another client, or under another spelling of the path.
		if w, ok, ferr := find(); ferr == nil && ok {
			return w, nil
		}
	}
	if err != nil {
		return w, fmt.Errorf("make %s a workspace: %w", dir, err)
	}
	return w, nil
}
