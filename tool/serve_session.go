package tool

import (
	"context"
	"encoding/json"
)

// SessionStore reads and writes the conversation's facts where they live. In a tool
// compiled into the host that is Context.Session itself; in a Go tool folder, which runs in
// a worker process, the facts live in the host and every Get and Set is a request to it.
type SessionStore interface {
	Get(ctx context.Context, key string) (json.RawMessage, bool, error)
	Set(ctx context.Context, key string, value json.RawMessage) error
}

// sessionProvider is implemented by the powers a worker gives its calls.
type sessionProvider interface{ sessionStore() SessionStore }

// SessionStore returns the call's session facts as the host holds them. Use it rather than
// Session in a tool that may run in a worker: there Session starts empty for every call,
// and what a tool sets on it is sent to the host, but what other calls set is not in it.
func (c *Context) SessionStore() SessionStore {
	for _, p := range []any{c.FS, c.Asker, c.LLM, c.Workspaces} {
		if sp, ok := p.(sessionProvider); ok {
			return sp.sessionStore()
		}
	}
	return localSession{c.Session}
}

// localSession is a SessionStore over the facts in memory.
type localSession struct{ facts *SessionFacts }

func (s localSession) Get(_ context.Context, key string) (json.RawMessage, bool, error) {
	v, ok := s.facts.Get(key)
	return v, ok, nil
}

func (s localSession) Set(_ context.Context, key string, value json.RawMessage) error {
	if len(value) == 0 {
		value = json.RawMessage("null")
	}
	return s.facts.Set(key, value)
}
