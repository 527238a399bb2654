package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"
)

// Workspace is a folder the agent works in, plus extra paths its tools may reach.
type Workspace struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	Path         string    `json:"path"`         // absolute and clean
	AllowedPaths []string  `json:"allowedPaths"` // absolute and clean, never nil
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
}

// checkWorkspace normalizes w's paths and says what is wrong with them.
func checkWorkspace(w *Workspace) error {
	if w.Path == "" || !filepath.IsAbs(w.Path) {
		return fmt.Errorf("workspace path %q must be an absolute path", w.Path)
	}
	w.Path = filepath.Clean(w.Path)
	paths := make([]string, 0, len(w.AllowedPaths))
	for _, p := range w.AllowedPaths {
		if p == "" || !filepath.IsAbs(p) {
			return fmt.Errorf("allowed path %q of workspace %s must be an absolute path", p, w.Path)
		}
		paths = append(paths, filepath.Clean(p))
	}
	w.AllowedPaths = paths
	return nil
}

// CreateWorkspace stores a new workspace. An empty ID gets a fresh one; the timestamps are
// set to now. A second workspace on the same folder fails with ErrConflict.
func (db *DB) CreateWorkspace(ctx context.Context, w Workspace) (Workspace, error) {
	if err := checkWorkspace(&w); err != nil {
		return Workspace{}, fmt.Errorf("create workspace: %w", err)
	}
	if w.ID == "" {
		w.ID = NewID("ws_")
	}
	allowed, err := json.Marshal(w.AllowedPaths)
	if err != nil {
		return Workspace{}, fmt.Errorf("create workspace %s: %w", w.ID, err)
	}
	t := now()
	w.CreatedAt, w.UpdatedAt = toTime(t), toTime(t)
	_, err = db.execWrite(ctx, `INSERT INTO workspaces (id, name, path, allowed_paths, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?)`, w.ID, w.Name, w.Path, string(allowed), t, t)
	if isUnique(err) {
		return Workspace{}, fmt.Errorf("create workspace %s: a workspace with id %s or path %s already exists: %w", w.ID, w.ID, w.Path, ErrConflict)
	}
	if err != nil {
		return Workspace{}, fmt.Errorf("create workspace %s: %w", w.ID, err)
	}
	return w, nil
}

const workspaceColumns = `id, name, path, allowed_paths, created_at, updated_at`

func scanWorkspace(row interface{ Scan(...any) error }) (Workspace, error) {
	var w Workspace
	var allowed string
	var created, updated int64
	if err := row.Scan(&w.ID, &w.Name, &w.Path, &allowed, &created, &updated); err != nil {
		return Workspace{}, err
	}
	if err := json.Unmarshal([]byte(allowed), &w.AllowedPaths); err != nil {
		return Workspace{}, fmt.Errorf("allowed paths of workspace %s: %w", w.ID, err)
	}
	if w.AllowedPaths == nil {
		w.AllowedPaths = []string{}
	}
	w.CreatedAt, w.UpdatedAt = toTime(created), toTime(updated)
	return w, nil
}

// Workspace returns the workspace with id.
func (db *DB) Workspace(ctx context.Context, id string) (Workspace, error) {
	w, err := scanWorkspace(db.stmts.read[stmtReadWorkspace].QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return Workspace{}, fmt.Errorf("get workspace %s: %w", id, err)
	}
	return w, nil
}

// WorkspaceByPath returns the workspace on the folder path (compared after cleaning).
func (db *DB) WorkspaceByPath(ctx context.Context, path string) (Workspace, error) {
	w, err := scanWorkspace(db.read.QueryRowContext(ctx, `SELECT `+workspaceColumns+` FROM workspaces WHERE path = ?`, filepath.Clean(path)))
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return Workspace{}, fmt.Errorf("get workspace at %s: %w", path, err)
	}
	return w, nil
}

// ListWorkspaces returns every workspace, most recently updated first.
func (db *DB) ListWorkspaces(ctx context.Context) ([]Workspace, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT `+workspaceColumns+` FROM workspaces ORDER BY updated_at DESC, id DESC`)
	if err != nil {
		return nil, fmt.Errorf("list workspaces: %w", err)
	}
	defer rows.Close()
	out := []Workspace{}
	for rows.Next() {
		w, err := scanWorkspace(rows)
		if err != nil {
			return nil, fmt.Errorf("list workspaces: %w", err)
		}
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list workspaces: %w", err)
	}
	return out, nil
}

// UpdateWorkspace saves w's name, path and allowed paths and returns the workspace as
// stored, with UpdatedAt set to now.
func (db *DB) UpdateWorkspace(ctx context.Context, w Workspace) (Workspace, error) {
	if err := checkWorkspace(&w); err != nil {
		return Workspace{}, fmt.Errorf("update workspace %s: %w", w.ID, err)
	}
	allowed, err := json.Marshal(w.AllowedPaths)
	if err != nil {
		return Workspace{}, fmt.Errorf("update workspace %s: %w", w.ID, err)
	}
	err = affected(db.execWrite(ctx, `UPDATE workspaces SET name = ?, path = ?, allowed_paths = ?, updated_at = ? WHERE id = ?`,
		w.Name, w.Path, string(allowed), now(), w.ID))
	if isUnique(err) {
		return Workspace{}, fmt.Errorf("update workspace %s: another workspace is at %s: %w", w.ID, w.Path, ErrConflict)
	}
	if err != nil {
		return Workspace{}, fmt.Errorf("update workspace %s: %w", w.ID, err)
	}
	return db.Workspace(ctx, w.ID)
}

// DeleteWorkspace removes the workspace and, with it, its sessions and everything in them.
func (db *DB) DeleteWorkspace(ctx context.Context, id string) error {
	err := db.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM events WHERE session_id IN (SELECT id FROM sessions WHERE workspace_id = ?)`, id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM event_seqs WHERE session_id IN (SELECT id FROM sessions WHERE workspace_id = ?)`, id); err != nil {
			return err
		}
		return affected(tx.ExecContext(ctx, `DELETE FROM workspaces WHERE id = ?`, id))
	})
	if err != nil {
		return fmt.Errorf("delete workspace %s: %w", id, err)
	}
	return nil
}

// AddAllowedPath adds an absolute path to the workspace's allowed paths for good and
// returns the workspace as stored, and whether it changed (not when the path is there
// already, or is the workspace's folder).
func (db *DB) AddAllowedPath(ctx context.Context, workspaceID, path string) (Workspace, bool, error) {
	return db.changeAllowedPath(ctx, workspaceID, path, true)
}

// RemoveAllowedPath removes a path from the workspace's allowed paths and returns the
// workspace as stored, and whether it changed (not when the path was not there).
func (db *DB) RemoveAllowedPath(ctx context.Context, workspaceID, path string) (Workspace, bool, error) {
	return db.changeAllowedPath(ctx, workspaceID, path, false)
}

func (db *DB) changeAllowedPath(ctx context.Context, workspaceID, path string, add bool) (Workspace, bool, error) {
	var w Workspace
	var changed bool
	err := db.batch(ctx, func(tx *Tx) error {
		var err error
		w, changed, err = tx.changeAllowedPath(ctx, workspaceID, path, add)
		return err
	})
	return w, changed, err
}

// AddAllowedPath is DB.AddAllowedPath within the batch: read and changed in one
// transaction, so changes made at once by several callers are all kept.
func (tx *Tx) AddAllowedPath(ctx context.Context, workspaceID, path string) (Workspace, bool, error) {
	return tx.changeAllowedPath(ctx, workspaceID, path, true)
}

// RemoveAllowedPath is DB.RemoveAllowedPath within the batch.
func (tx *Tx) RemoveAllowedPath(ctx context.Context, workspaceID, path string) (Workspace, bool, error) {
	return tx.changeAllowedPath(ctx, workspaceID, path, false)
}

func (tx *Tx) changeAllowedPath(ctx context.Context, workspaceID, path string, add bool) (Workspace, bool, error) {
	verb := "remove"
	if add {
		verb = "add"
	}
	fail := func(err error) (Workspace, bool, error) {
		return Workspace{}, false, fmt.Errorf("%s allowed path %s of workspace %s: %w", verb, path, workspaceID, err)
	}
	if path == "" || !filepath.IsAbs(path) {
		return fail(fmt.Errorf("%q is not an absolute path", path))
	}
	path = filepath.Clean(path)
	query := `SELECT ` + workspaceColumns + ` FROM workspaces WHERE id = ?`
	if tx.db.dialect == dialectPostgres {
		// Read committed lets another transaction (another instance, another session of
		// this workspace) change the list between this read and the write below, and one
		// of the two changes would be lost: lock the row until this one commits. SQLite has
		// one writer at a time already.
		query += ` FOR UPDATE`
	}
	w, err := scanWorkspace(tx.tx.QueryRowContext(ctx, query, workspaceID))
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return fail(err)
	}
	i := slices.Index(w.AllowedPaths, path)
	switch {
	case add && (i >= 0 || path == w.Path), !add && i < 0:
		return w, false, nil
	case add:
		w.AllowedPaths = append(w.AllowedPaths, path)
	default:
		w.AllowedPaths = slices.Delete(w.AllowedPaths, i, i+1)
	}
	allowed, err := json.Marshal(w.AllowedPaths)
	if err != nil {
		return fail(err)
	}
	t := now()
	if _, err := tx.tx.ExecContext(ctx, `UPDATE workspaces SET allowed_paths = ?, updated_at = ? WHERE id = ?`, string(allowed), t, workspaceID); err != nil {
		return fail(err)
	}
	w.UpdatedAt = toTime(t)
	return w, true, nil
}
