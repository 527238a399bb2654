package tool

import (
	"context"
	"sync"
)

// CallLink ties a call's context to its turn's: Stop on the turn cancels the call until the
// link is released.
type CallLink struct {
	stop    func() bool
	cancel  context.CancelCauseFunc
	release sync.Once
}

// LinkCallSignal returns a context for one call that is cancelled when turn is, and a link
// to release once the call settles, so a later Stop reaches nothing that has already
// finished. The call's context keeps turn's values but not its deadline.
func LinkCallSignal(turn context.Context) (context.Context, *CallLink) {
	call, cancel := context.WithCancelCause(context.WithoutCancel(turn))
	l := &CallLink{cancel: cancel}
	l.stop = context.AfterFunc(turn, func() { cancel(context.Cause(turn)) })
	return call, l
}

// Release unlinks the call from the turn. The call's context is cancelled with
// context.Canceled only to free its resources; callers release after the call settled.
func (l *CallLink) Release() {
	l.release.Do(func() {
		l.stop()
		l.cancel(errReleased)
	})
}

type releasedError struct{}

func (releasedError) Error() string { return "call settled" }

var errReleased error = releasedError{}
