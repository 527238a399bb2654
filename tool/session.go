package tool

import (
	"encoding/json"
	"fmt"
	"sync"
)

// SessionFacts are a conversation's facts, shared by every call in it (createSessionFacts).
// Values are JSON. It is safe for concurrent use.
type SessionFacts struct {
	mu    sync.RWMutex
	facts map[string]json.RawMessage
	// keep, when set, stores a fact durably before it is visible (the server's store), so a
	// conversation's facts outlive the process; a fact it refuses is not set.
	keep func(key string, value json.RawMessage) error
}

// NewKeptSessionFacts makes session facts that start as initial and pass every Set to keep
// first: a Set that keep refuses fails and changes nothing.
func NewKeptSessionFacts(initial map[string]json.RawMessage, keep func(key string, value json.RawMessage) error) *SessionFacts {
	facts := make(map[string]json.RawMessage, len(initial))
	for k, v := range initial {
		facts[k] = v
	}
	return &SessionFacts{facts: facts, keep: keep}
}

// NewSessionFacts makes empty session facts.
func NewSessionFacts() *SessionFacts {
	// The map is made on the first Set: most calls never touch session facts, and every
	// call gets facts of its own when the caller gives none.
	return &SessionFacts{}
}

// Get returns the fact stored under key.
func (s *SessionFacts) Get(key string) (json.RawMessage, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.facts[key]
	return v, ok
}

// Set stores a JSON value under key; invalid JSON is refused.
func (s *SessionFacts) Set(key string, value json.RawMessage) error {
	if !json.Valid(value) {
		return fmt.Errorf("session fact %q: value is not valid JSON", key)
	}
	value = append(json.RawMessage(nil), value...)
	s.mu.Lock()
	defer s.mu.Unlock()
	// Kept under the lock so two Sets of one key reach the store in the order they are seen.
	if s.keep != nil {
		if err := s.keep(key, value); err != nil {
			return fmt.Errorf("session fact %q: %w", key, err)
		}
	}
	if s.facts == nil {
		s.facts = map[string]json.RawMessage{}
	}
	s.facts[key] = value
	return nil
}

// Snapshot returns a copy of all facts.
func (s *SessionFacts) Snapshot() map[string]json.RawMessage {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m := make(map[string]json.RawMessage, len(s.facts))
	for k, v := range s.facts {
		m[k] = v
	}
	return m
}
