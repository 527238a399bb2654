package chat

import (
	"context"
	"time"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/internal/termtext"
)

// longTurn is how long a turn runs before its end is worth a notification: a person who
// waited that long has likely turned to another window.
const longTurn = 10 * time.Second

// turnClock remembers when the turn the chat follows started (zero: not seen start).
type turnClock struct {
	on      bool // Options.Notify: the output is a terminal that takes the sequences
	now     func() time.Time
	started time.Time
}

func (c *turnClock) start() {
	if c.now == nil {
		c.now = time.Now
	}
	c.started = c.now()
}

// long reports whether the turn has run longer than longTurn (false when its start was
// not seen: the chat joined while it ran).
func (c *turnClock) long() bool {
	if c.started.IsZero() {
		return false
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c.now().Sub(c.started) > longTurn
}

// notification is the terminal's bell followed by OSC 9, which iTerm2, WezTerm, kitty,
// foot, ghostty and Windows Terminal show as a desktop notification (other terminals
// ignore it; the bell alone then marks the tab or window). text is cleaned of control
// characters first, so a session's title cannot end the sequence and write to the screen.
func notification(text string) string {
	return "\a\x1b]9;" + termtext.Line(text) + "\a"
}

// notifyTurnEnd rings the terminal when a long turn ends, saying how.
func (u *chatUI) notifyTurnEnd(p harness.TurnFinished) {
	defer func() { u.clock.started = time.Time{} }()
	if !u.clock.on || !u.clock.long() || p.Reason == harness.ReasonStopped {
		return
	}
	what := "the turn finished"
	if p.Reason == harness.ReasonError || p.Reason == harness.ReasonInterrupted {
		what = "the turn failed"
	}
	u.ring(what + " (" + u.sessionName() + ")")
}

// notifyAsk rings the terminal when a question comes during a long turn.
func (u *chatUI) notifyAsk() {
	if u.clock.on && u.clock.long() {
		u.ring("a question waits for your answer (" + u.sessionName() + ")")
	}
}

// ring shows text on the desktop (and rings the bell), else as the terminal's OSC 9. A
// desktop that fails is said once and not tried again: the terminal takes over.
func (u *chatUI) ring(text string) {
	if u.desktop != nil {
		ctx := u.ctx
		if ctx == nil {
			ctx = context.Background()
		}
		err := u.desktop.Notify(ctx, "jean2", termtext.Line(text))
		if err == nil {
			if u.bell {
				u.print("\a")
			}
			return
		}
		u.desktop = nil
		u.out.writeLine(u.st.dim("(" + err.Error() + "; the terminal is rung instead — JEAN2_CHAT_NOTIFY=terminal chooses it)"))
	}
	if u.bell {
		u.print(notification("jean2: " + text))
	}
}

func (u *chatUI) sessionName() string {
	if u.ses.Title != "" {
		return u.ses.Title
	}
	return u.ses.ID
}
