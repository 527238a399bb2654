package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Session is one conversation in a workspace. UpdatedAt moves whenever a message is
// added, so a list of sessions sorted by it shows the active ones first.
type Session struct {
	ID          string `json:"id"`
	WorkspaceID string `json:"workspaceId"`
	Title       string `json:"title"`
	Provider    string `json:"provider"` // a configured provider's name
	Model       string `json:"model"`
	// Agent names the agent preset the session's turns run with; "" is the default
	// (harness.DefaultAgent).
	Agent     string    `json:"agent"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// CreateSession stores a new session in an existing workspace. An empty ID gets a fresh
// one; the timestamps are set to now.
func (db *DB) CreateSession(ctx context.Context, s Session) (Session, error) {
	if s.ID == "" {
		s.ID = NewID("ses_")
	}
	t := now()
	s.CreatedAt, s.UpdatedAt = toTime(t), toTime(t)
	_, err := db.execWrite(ctx, `INSERT INTO sessions (id, workspace_id, title, provider, model, agent, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, s.ID, s.WorkspaceID, s.Title, s.Provider, s.Model, s.Agent, t, t)
	switch {
	case isForeignKey(err):
		return Session{}, fmt.Errorf("create session %s: workspace %s: %w", s.ID, s.WorkspaceID, ErrNotFound)
	case isUnique(err):
		return Session{}, fmt.Errorf("create session %s: the id is taken: %w", s.ID, ErrConflict)
	case err != nil:
		return Session{}, fmt.Errorf("create session %s: %w", s.ID, err)
	}
	return s, nil
}

const sessionColumns = `id, workspace_id, title, provider, model, agent, created_at, updated_at`

func scanSession(row interface{ Scan(...any) error }) (Session, error) {
	var s Session
	var created, updated int64
	if err := row.Scan(&s.ID, &s.WorkspaceID, &s.Title, &s.Provider, &s.Model, &s.Agent, &created, &updated); err != nil {
		return Session{}, err
	}
	s.CreatedAt, s.UpdatedAt = toTime(created), toTime(updated)
	return s, nil
}

// Session returns the session with id.
func (db *DB) Session(ctx context.Context, id string) (Session, error) {
	s, err := scanSession(db.stmts.read[stmtReadSession].QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return Session{}, fmt.Errorf("get session %s: %w", id, err)
	}
	return s, nil
}

// SessionWorkspace returns the session with id and its workspace, read together.
func (db *DB) SessionWorkspace(ctx context.Context, id string) (Session, Workspace, error) {
	var s Session
	var w Workspace
	var sCreated, sUpdated, wCreated, wUpdated int64
	var allowed string
	err := db.stmts.read[stmtReadSessionWorkspace].QueryRowContext(ctx, id).Scan(&s.ID, &s.WorkspaceID, &s.Title, &s.Provider, &s.Model, &s.Agent,
		&sCreated, &sUpdated, &w.ID, &w.Name, &w.Path, &allowed, &wCreated, &wUpdated)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err == nil {
		err = json.Unmarshal([]byte(allowed), &w.AllowedPaths)
	}
	if err != nil {
		return Session{}, Workspace{}, fmt.Errorf("get session %s and its workspace: %w", id, err)
	}
	if w.AllowedPaths == nil {
		w.AllowedPaths = []string{}
	}
	s.CreatedAt, s.UpdatedAt = toTime(sCreated), toTime(sUpdated)
	w.CreatedAt, w.UpdatedAt = toTime(wCreated), toTime(wUpdated)
	return s, w, nil
}

// ListSessions returns the sessions of a workspace, most recently updated first. An
// unknown workspace has none.
func (db *DB) ListSessions(ctx context.Context, workspaceID string) ([]Session, error) {
	return queryAll(ctx, db, "list sessions of workspace "+workspaceID, scanSession, `SELECT `+sessionColumns+` FROM sessions
		WHERE workspace_id = ? ORDER BY updated_at DESC, id DESC`, workspaceID)
}

// UpdateSession saves s's title, provider, model and agent and returns the session as stored,
// with UpdatedAt set to now. A session does not move between workspaces.
func (db *DB) UpdateSession(ctx context.Context, s Session) (Session, error) {
	err := affected(db.execWrite(ctx, `UPDATE sessions SET title = ?, provider = ?, model = ?, agent = ?, updated_at = ? WHERE id = ?`,
		s.Title, s.Provider, s.Model, s.Agent, now(), s.ID))
	if err != nil {
		return Session{}, fmt.Errorf("update session %s: %w", s.ID, err)
	}
	return db.Session(ctx, s.ID)
}

// DeleteSession removes the session with its messages, parts, ledgers and events. Its
// remembered grants are not touched here: ask.Grants.EndSession forgets them in memory and
// in the store together.
func (db *DB) DeleteSession(ctx context.Context, id string) error {
	err := db.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM events WHERE session_id = ?`, id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM event_seqs WHERE session_id = ?`, id); err != nil {
			return err
		}
		return affected(tx.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, id))
	})
	if err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	return nil
}
