package chat

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jean2/jean2/internal/termtext"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/undo"
)

// errDialogCancelled ends a dialog the person left with Ctrl-C or an empty answer.
var errDialogCancelled = errors.New("cancelled")

// errChatEnds ends a dialog because the input ended: the chat ends too.
var errChatEnds = errors.New("the input ended")

// readAnswer shows prompt and waits for a line; Ctrl-C cancels.
func (u *chatUI) readAnswer(ctx context.Context, lines <-chan inputLine, prompt string) (string, error) {
	u.lineStart()
	u.print(prompt)
	u.col0 = false
	typed := ""
	for {
		select {
		case l, ok := <-lines:
			if !ok || l.err != nil {
				u.col0 = true
				return "", errChatEnds
			}
			if l.ctrlL { // no redraw in a dialog: what was typed is kept
				typed += l.text
				continue
			}
			u.col0 = true
			return strings.TrimSpace(typed + l.text), nil
		case <-u.intr:
			return "", errDialogCancelled
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// restoreDialog is /restore: it lists the turns that changed files, asks which one to go
// back before, shows what would change, and restores, offering to force past files changed
// outside jean2. It reports whether the chat should end.
func (u *chatUI) restoreDialog(ctx context.Context, lines <-chan inputLine) bool {
	err := u.restore(ctx, lines)
	switch {
	case errors.Is(err, errChatEnds):
		return true
	case errors.Is(err, errDialogCancelled):
		u.println(u.st.dim("(nothing was restored)"))
	case err != nil:
		u.println(u.st.red("Restore failed: " + termtext.Text(err.Error())))
	}
	u.prompt()
	return false
}

// restore is /restore's dialog; errDialogCancelled when the person picks no turn.
func (u *chatUI) restore(ctx context.Context, lines <-chan inputLine) error {
	sid := url.PathEscape(u.ses.ID)
	var led struct {
		Turns []turnChanges `json:"turns"`
	}
	if err := u.api.Call(ctx, http.MethodGet, "/api/sessions/"+sid+"/ledgers", nil, &led); err != nil {
		return fmt.Errorf("list the turns' changes: %w", err)
	}
	turns := fileTurns(led.Turns)
	if len(turns) == 0 {
		u.println(u.st.dim("No turn of this session has changed a file yet."))
		return nil
	}
	asked, err := u.turnPrompts(ctx, sid)
	if err != nil {
		return err
	}
	u.listTurns(turns, asked)
	n, err := u.pickTurn(ctx, lines, len(turns))
	if err != nil {
		return err
	}
	return u.restoreBefore(ctx, lines, turns[n-1], n, len(turns))
}

// turnPrompts returns what names a turn: the last message the person sent before seq.
func (u *chatUI) turnPrompts(ctx context.Context, sid string) (func(seq int64) string, error) {
	var msgs struct {
		Messages []store.Message `json:"messages"`
	}
	if err := u.api.Call(ctx, http.MethodGet, "/api/sessions/"+sid+"/messages", nil, &msgs); err != nil {
		return nil, fmt.Errorf("list the session's messages: %w", err)
	}
	return func(seq int64) string {
		text := ""
		for _, m := range msgs.Messages {
			if m.Seq >= seq {
				break
			}
			if m.Role == store.RoleUser {
				text = m.Content
			}
		}
		return text
	}, nil
}

// listTurns shows the turns that changed files, numbered from 1, each with up to five of
// its files.
func (u *chatUI) listTurns(turns []turnChanges, asked func(seq int64) string) {
	u.println(u.st.bold("Turns that changed files:"))
	for i, t := range turns {
		changed := fmt.Sprintf("Changed %d file%s", t.Changed.Files, plural(t.Changed.Files))
		if t.Changed.Failed > 0 {
			changed += fmt.Sprintf(" (%d failed)", t.Changed.Failed)
		}
		line := fmt.Sprintf("  %d) %s  %s  %s", i+1, t.CreatedAt.Local().Format("Jan 2 15:04"),
			u.st.bold(strconv.Quote(clip(termtext.Line(asked(t.MessageSeq)), 50))), changed)
		if !t.RestoredAt.IsZero() {
			line += u.st.dim("  (restored)")
		}
		u.println(line)
		for j, f := range t.Files {
			if j == 5 {
				u.println(u.st.dim(fmt.Sprintf("       … and %d more", len(t.Files)-5)))
				break
			}
			u.println(u.st.dim("       " + u.rel(f.Path)))
		}
	}
}

// pickTurn asks for a turn's number, 1 to count; Enter or anything else cancels.
func (u *chatUI) pickTurn(ctx context.Context, lines <-chan inputLine, count int) (int, error) {
	answer, err := u.readAnswer(ctx, lines, fmt.Sprintf("Put files back as they were before which turn? (1-%d, Enter to cancel): ", count))
	if err != nil {
		return 0, err
	}
	if answer == "" {
		return 0, errDialogCancelled
	}
	n, err := strconv.Atoi(answer)
	if err != nil || n < 1 || n > count {
		u.println(u.st.dim(fmt.Sprintf("(%q is not a turn number from 1 to %d)", clip(termtext.Line(answer), 40), count)))
		return 0, errDialogCancelled
	}
	return n, nil
}

// restoreBefore puts the files back as they were before turn (the n-th of count): it shows
// what would change before anything does, asks, and asks again when files changed outside
// jean2 between the preview and the restore.
func (u *chatUI) restoreBefore(ctx context.Context, lines <-chan inputLine, turn turnChanges, n, count int) error {
	preview, err := u.api.restore(ctx, u.ses.ID, turn.MessageID, undo.RestoreOptions{DryRun: true})
	if _, refused := isAPIError(err, "conflict"); err != nil && !refused {
		return err
	}
	later := ""
	if n < count {
		later = " and every later turn"
	}
	u.println(fmt.Sprintf("This undoes turn %d%s:", n, later))
	u.showReport(preview)
	opts, err := u.confirmRestore(ctx, lines, preview)
	if err != nil {
		return err
	}
	u.restoredHere = turn.MessageID
	report, err := u.api.restore(ctx, u.ses.ID, turn.MessageID, opts)
	if _, refused := isAPIError(err, "conflict"); refused {
		// Something changed outside jean2 between the preview and now.
		u.println(u.st.yellow("Files changed meanwhile:"))
		u.showReport(report)
		if opts, err = u.confirmRestore(ctx, lines, report); err != nil {
			return err
		}
		report, err = u.api.restore(ctx, u.ses.ID, turn.MessageID, opts)
	}
	if err != nil {
		return err
	}
	u.println(u.st.green("Restored."))
	u.showReport(report)
	u.println("")
	return nil
}

// confirmRestore asks whether to go ahead with the restore a report plans, saying what
// forcing past conflicts or leaving unrestorable files means, and returns the options to
// restore with.
func (u *chatUI) confirmRestore(ctx context.Context, lines <-chan inputLine, r undo.Report) (undo.RestoreOptions, error) {
	var o undo.RestoreOptions
	question := "Restore? [y/N]: "
	if len(r.Conflicts) > 0 {
		o.Force = true
		u.println(u.st.yellow("Files marked conflict were changed outside jean2 since; restoring puts them back all the same, and those changes are lost."))
		question = "Restore anyway? [y/N]: "
	}
	if len(r.Unrestorable) > 0 {
		o.Partial = true
		u.println(u.st.yellow("Files marked cannot undo cannot be put back exactly; they would be left as they are."))
		question = "Restore the rest? [y/N]: "
	}
	a, err := u.readAnswer(ctx, lines, question)
	if err != nil {
		return o, err
	}
	if !isYes(a) {
		return o, errDialogCancelled
	}
	return o, nil
}

func isYes(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "y", "yes":
		return true
	}
	return false
}

// showReport lists what a restore did, or would do.
func (u *chatUI) showReport(r undo.Report) {
	verb := func(done, planned string) string {
		if r.DryRun {
			return planned
		}
		return done
	}
	list := func(label string, paths []string, style func(string) string) {
		for _, p := range paths {
			u.println("  " + style(fmt.Sprintf("%-12s", label)) + " " + u.rel(p))
		}
	}
	problems := func(label string, ps []undo.Problem, style func(string) string) {
		for _, p := range ps {
			u.println("  " + style(fmt.Sprintf("%-12s", label)) + " " + u.rel(p.Path) + u.st.dim(" — "+termtext.Line(p.Reason)))
		}
	}
	id := func(s string) string { return s }
	list(verb("restored", "restore"), r.Restored, id)
	list(verb("recreated", "recreate"), r.Recreated, u.st.green)
	list(verb("removed", "remove"), r.Removed, u.st.red)
	conflict := "conflict"
	if r.Forced {
		conflict = "overwritten"
	}
	problems(conflict, r.Conflicts, u.st.yellow)
	problems(verb("left as is", "cannot undo"), r.Unrestorable, u.st.yellow)
	problems("failed", r.Errors, u.st.red)
	if len(r.Restored)+len(r.Recreated)+len(r.Removed)+len(r.Conflicts)+len(r.Unrestorable)+len(r.Errors) == 0 {
		u.println(u.st.dim("  (no file needs to change)"))
	}
}

// rel shows a path relative to the workspace when it lies inside it.
func (u *chatUI) rel(p string) string {
	if u.ws.Path != "" {
		if r, err := filepath.Rel(u.ws.Path, p); err == nil && r != ".." && !strings.HasPrefix(r, "../") {
			return termtext.Line(r)
		}
	}
	return termtext.Line(p)
}
