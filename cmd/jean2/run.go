package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jean2/jean2/chat"
)

// Exit codes of jean2 run (docs/automation.md).
const (
	runExitDone    = 0
	runExitFailed  = 1
	runExitRefused = 3
	runExitLimit   = 4
)

const runUsage = `Usage:
  jean2 run [flags] "PROMPT"      send PROMPT as one turn and wait for its end
  jean2 run [flags] -             read the prompt from stdin (also when no PROMPT is given
                                  and stdin is not a terminal)

Runs one turn of the agent with no person at the screen (scripts, CI): the final answer
goes to stdout; with --format json every event of the turn instead, one JSON object a line
(the API's events, docs/api.md, and run.started, run.refused, run.finished).
Tools' asks are answered by the policy the flags give, at once: what it does not cover is
refused, and every refusal is reported (stderr, or a run.refused event). It uses the jean2
server running on $JEAN2_HOME (as jean2 chat does), or starts its own inside itself.

  --workspace DIR    the folder the agent works in (default: the current folder)
  --session ID       continue an earlier session instead of starting a new one
  --server URL       the jean2 server (default: as jean2 chat finds it)
  --provider NAME    the provider the session uses
  --model MODEL      the model the session uses
  --agent NAME       the agent the session runs with: build (default), plan (read-only:
                     edits and commands are refused), or an agent file's (docs/harness.md)
  --max-turns N      stop the turn when the model is called for round N+1 (0: no limit
                     beyond the server's work budget)
  --timeout DUR      stop the turn after DUR (e.g. 10m; 0: none)
  --format F         text (default) or json
  --allow RULE       grant permission asks matching RULE, once each: TOOL or TOOL:RESOURCE,
                     globs allowed ('*', 'shell:*'); repeat it. Never grants what only a
                     person may (sensitive or protected paths)
  --deny RULE        refuse the asks of tools matching RULE, before any --allow
  --answers FILE     prepared answers, as jean2 tools run --answers takes them

Exit codes: 0 done; 1 the turn failed or could not run; 2 a mistake in the command;
3 an ask was refused; 4 --max-turns, --timeout or the server's round limits ended it.
`

// runFlags are jean2 run's flags.
type runFlags struct {
	workspace, session, server, provider, model string
	agent                                       string
	maxTurns                                    int
	timeout                                     time.Duration
	format, answers                             string
	allow, deny                                 ruleList
}

// runHeadless runs `jean2 run`.
func runHeadless(ctx context.Context, e env, args []string) error {
	f, prompt, help, err := parseRunFlags(e, args)
	if help || err != nil {
		return err
	}
	pol, err := newRunPolicy(f.allow, f.deny, f.answers)
	if err != nil {
		return err
	}
	o, err := headlessOptions(e, f)
	if err != nil {
		return err
	}
	o.Prompt, o.Decide = prompt, pol.decide
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	res, err := chat.RunHeadless(ctx, o)
	if ue, ok := errors.AsType[chat.UsageError](err); ok {
		return usageError{ue.Msg}
	}
	if err != nil {
		return err
	}
	return runExit(e, res, f.format == "json")
}

// parseRunFlags reads the flags and the prompt (the argument, or stdin).
func parseRunFlags(e env, args []string) (f runFlags, prompt string, help bool, err error) {
	fs := newFlags("run", e)
	fs.StringVar(&f.workspace, "workspace", "", "")
	fs.StringVar(&f.session, "session", "", "")
	fs.StringVar(&f.server, "server", "", "")
	fs.StringVar(&f.provider, "provider", "", "")
	fs.StringVar(&f.model, "model", "", "")
	fs.StringVar(&f.agent, "agent", "", "")
	fs.IntVar(&f.maxTurns, "max-turns", 0, "")
	fs.DurationVar(&f.timeout, "timeout", 0, "")
	fs.StringVar(&f.format, "format", "text", "")
	fs.StringVar(&f.answers, "answers", "", "")
	fs.Var(&f.allow, "allow", "")
	fs.Var(&f.deny, "deny", "")
	pos, help, err := parseMixed(fs, e, args, runUsage)
	if help || err != nil {
		return f, "", help, err
	}
	switch {
	case f.format != "text" && f.format != "json":
		return f, "", false, usagef("--format %q: use text or json", f.format)
	case f.maxTurns < 0 || f.timeout < 0:
		return f, "", false, usagef("--max-turns and --timeout may not be negative")
	case len(pos) > 1:
		return f, "", false, usagef("jean2 run takes one prompt (quote it), got %d arguments\n\n%s", len(pos), runUsage)
	}
	prompt, err = runPrompt(e, pos)
	return f, prompt, false, err
}

// maxPrompt bounds a prompt read from stdin.
const maxPrompt = 1 << 20

// runPrompt is the argument, or stdin when the argument is "-" or missing and stdin is not
// a terminal a person would be expected to type on.
func runPrompt(e env, pos []string) (string, error) {
	if len(pos) == 1 && pos[0] != "-" {
		return pos[0], nil
	}
	if len(pos) == 0 && e.stdinIsTerminal {
		return "", usagef("jean2 run needs a prompt: jean2 run \"PROMPT\", or pipe it in\n\n%s", runUsage)
	}
	data, err := io.ReadAll(io.LimitReader(e.stdin, maxPrompt+1))
	if err != nil {
		return "", fmt.Errorf("read the prompt from stdin: %w", err)
	}
	if len(data) > maxPrompt {
		return "", usagef("the prompt on stdin is over %d bytes", maxPrompt)
	}
	if strings.TrimSpace(string(data)) == "" {
		return "", usagef("the prompt on stdin is empty")
	}
	return string(data), nil
}

// headlessOptions finds the server and the workspace the way jean2 chat does.
func headlessOptions(e env, f runFlags) (chat.HeadlessOptions, error) {
	base, named, err := serverBase(e, f.server)
	if err != nil {
		return chat.HeadlessOptions{}, err
	}
	if err := chat.CheckServerURL(base); err != nil {
		return chat.HeadlessOptions{}, usagef("--server %s: %v", base, err)
	}
	workspace := ""
	if f.workspace != "" || f.session == "" {
		dir := f.workspace
		if dir == "" {
			dir = workingDir()
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return chat.HeadlessOptions{}, usagef("--workspace %s: %v", dir, err)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return chat.HeadlessOptions{}, usagef("--workspace %s is not a folder", dir)
		}
		workspace = abs
	}
	token, err := clientToken(e)
	if err != nil {
		return chat.HeadlessOptions{}, err
	}
	o := chat.HeadlessOptions{
		Server: base, Token: token, Workspace: workspace, Session: f.session,
		Provider: f.provider, Model: f.model, Agent: f.agent, MaxRounds: f.maxTurns, JSON: f.format == "json",
		Stdout: e.stdout, Stderr: e.stderr,
	}
	if !named {
		o.StartServer = func(ctx context.Context) (*chat.LocalServer, error) {
			dir := workspace
			if dir == "" {
				dir = workingDir()
			}
			return startLocalServer(ctx, e, dir)
		}
	}
	return o, nil
}

// runExit turns how the run ended into its exit code; text mode says why on stderr.
func runExit(e env, res chat.HeadlessResult, jsonMode bool) error {
	code := map[string]int{
		chat.StatusDone: runExitDone, chat.StatusRefused: runExitRefused, chat.StatusLimit: runExitLimit,
	}[res.Status]
	if res.Status == chat.StatusFailed {
		code = runExitFailed
	}
	if !jsonMode && res.Status != chat.StatusDone {
		why := res.Reason
		if res.Error != "" {
			why += ": " + res.Error
		}
		fmt.Fprintf(e.stderr, "jean2 run: %s (the turn ended: %s; %d asks refused; session %s)\n", res.Status, why, len(res.Refusals), res.SessionID)
	}
	if code == runExitDone {
		return nil
	}
	return exitError{code: code}
}
