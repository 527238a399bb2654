package chat

import (
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
	u.print(notification("jean2: " + what + " (" + u.sessionName() + ")"))
}

// notifyAsk rings the terminal when a question comes during a long turn.
func (u *chatUI) notifyAsk() {
	if u.clock.on && u.clock.long() {
		u.print(notification("jean2: a question waits for your answer (" + u.sessionName() + ")"))
	}
}

func (u *chatUI) sessionName() string {
	if u.ses.Title != "" {
		return u.ses.Title
	}
	return u.ses.ID
}
