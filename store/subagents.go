package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Subagent is what makes a session a child: the session whose turn started it with a
// `task` call, that call, and what the parent gave it. A session with no parent has none.
type Subagent struct {
	SessionID       string `json:"sessionId"`
	ParentSessionID string `json:"parentSessionId"`
	ParentCallID    string `json:"parentCallId"`
	// Tools are the tools the child may use; nil means all of its parent's.
	Tools        []string  `json:"tools"`
	Instructions string    `json:"instructions,omitempty"`
	Agent        string    `json:"agent,omitempty"`
	Description  string    `json:"description,omitempty"`
	CreatedAt    time.Time `json:"createdAt"`
}

// CreateChildSession stores a new session and its Subagent row in one transaction: a child
// is never seen without its parent. sub.SessionID is set to the session's id.
func (db *DB) CreateChildSession(ctx context.Context, s Session, sub Subagent) (Session, Subagent, error) {
	if s.ID == "" {
		s.ID = NewID("ses_")
	}
	if sub.ParentSessionID == "" {
		return Session{}, Subagent{}, fmt.Errorf("create child session %s: no parent session given", s.ID)
	}
	var tools sql.NullString
	if sub.Tools != nil {
		b, err := json.Marshal(sub.Tools)
		if err != nil {
			return Session{}, Subagent{}, fmt.Errorf("create child session %s: tools: %w", s.ID, err)
		}
		tools = sql.NullString{String: string(b), Valid: true}
	}
	t := now()
	s.CreatedAt, s.UpdatedAt = toTime(t), toTime(t)
	sub.SessionID, sub.CreatedAt = s.ID, toTime(t)
	err := db.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO sessions (id, workspace_id, title, provider, model, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, s.ID, s.WorkspaceID, s.Title, s.Provider, s.Model, t, t); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO subagents (session_id, parent_session_id, parent_call_id, tools, instructions, agent, description, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, s.ID, sub.ParentSessionID, sub.ParentCallID, tools, sub.Instructions, sub.Agent, sub.Description, t)
		return err
	})
	switch {
	case isForeignKey(err):
		return Session{}, Subagent{}, fmt.Errorf("create child session %s: workspace %s: %w", s.ID, s.WorkspaceID, ErrNotFound)
	case isUnique(err):
		return Session{}, Subagent{}, fmt.Errorf("create child session %s: the id is taken: %w", s.ID, ErrConflict)
	case err != nil:
		return Session{}, Subagent{}, fmt.Errorf("create child session %s of %s: %w", s.ID, sub.ParentSessionID, err)
	}
	return s, sub, nil
}

const subagentColumns = `session_id, parent_session_id, parent_call_id, tools, instructions, agent, description, created_at`

func scanSubagent(row interface{ Scan(...any) error }) (Subagent, error) {
	var sub Subagent
	var tools sql.NullString
	var created int64
	if err := row.Scan(&sub.SessionID, &sub.ParentSessionID, &sub.ParentCallID, &tools, &sub.Instructions, &sub.Agent, &sub.Description, &created); err != nil {
		return Subagent{}, err
	}
	if tools.Valid {
		if err := json.Unmarshal([]byte(tools.String), &sub.Tools); err != nil {
			return Subagent{}, fmt.Errorf("tools %q: %w", tools.String, err)
		}
		if sub.Tools == nil {
			sub.Tools = []string{}
		}
	}
	sub.CreatedAt = toTime(created)
	return sub, nil
}

// Subagent returns what makes the session a child; ErrNotFound when it has no parent.
func (db *DB) Subagent(ctx context.Context, sessionID string) (Subagent, error) {
	sub, err := scanSubagent(db.read.QueryRowContext(ctx, `SELECT `+subagentColumns+` FROM subagents WHERE session_id = ?`, sessionID))
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return Subagent{}, fmt.Errorf("get the parent of session %s: %w", sessionID, err)
	}
	return sub, nil
}

// Children returns the sessions the session's turns started, oldest first.
func (db *DB) Children(ctx context.Context, parentSessionID string) ([]Subagent, error) {
	return db.subagents(ctx, "children of session "+parentSessionID,
		`SELECT `+subagentColumns+` FROM subagents WHERE parent_session_id = ? ORDER BY created_at, parent_call_id, session_id`, parentSessionID)
}

// WorkspaceChildren returns the child sessions of a workspace, so a list of its sessions
// can show them under their parents.
func (db *DB) WorkspaceChildren(ctx context.Context, workspaceID string) ([]Subagent, error) {
	return db.subagents(ctx, "child sessions of workspace "+workspaceID,
		`SELECT `+prefixed("a.", subagentColumns)+` FROM subagents a JOIN sessions s ON s.id = a.session_id
		 WHERE s.workspace_id = ? ORDER BY a.created_at, a.parent_call_id, a.session_id`, workspaceID)
}

func (db *DB) subagents(ctx context.Context, what, query string, args ...any) ([]Subagent, error) {
	return queryAll(ctx, db, "list "+what, scanSubagent, query, args...)
}

// prefixed qualifies each of a comma-separated column list with p.
func prefixed(p, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}
