package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jean2/jean2/ask"
)

var _ ask.Store = (*DB)(nil)

// LoadGrants returns every stored grant, oldest first (ask.Store).
func (db *DB) LoadGrants(ctx context.Context) ([]ask.Grant, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT id, data FROM grants ORDER BY granted_at, id`)
	if err != nil {
		return nil, fmt.Errorf("load grants: %w", err)
	}
	defer rows.Close()
	out := []ask.Grant{}
	for rows.Next() {
		var id, data string
		if err := rows.Scan(&id, &data); err != nil {
			return nil, fmt.Errorf("load grants: %w", err)
		}
		var g ask.Grant
		if err := json.Unmarshal([]byte(data), &g); err != nil {
			return nil, fmt.Errorf("load grant %s: %w", id, err)
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load grants: %w", err)
	}
	return out, nil
}

// SaveGrant stores g, replacing a stored grant with the same id (ask.Store).
func (db *DB) SaveGrant(ctx context.Context, g ask.Grant) error {
	if g.ID == "" || g.Tool == "" {
		return fmt.Errorf("save grant %q: a grant needs an id and a tool", g.ID)
	}
	data, err := json.Marshal(g)
	if err != nil {
		return fmt.Errorf("save grant %s: %w", g.ID, err)
	}
	_, err = db.execWrite(ctx, `INSERT INTO grants (id, tool, duration, session_id, workspace_id, granted_at, data)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET tool = excluded.tool, duration = excluded.duration, session_id = excluded.session_id,
			workspace_id = excluded.workspace_id, granted_at = excluded.granted_at, data = excluded.data`,
		g.ID, g.Tool, g.Duration, g.SessionID, g.WorkspaceID, fromTime(g.GrantedAt), string(data))
	if err != nil {
		return fmt.Errorf("save grant %s for tool %s: %w", g.ID, g.Tool, err)
	}
	return nil
}

// DeleteGrant removes the stored grant with id (ask.Store). Deleting a grant that is not
// stored is not an error: the point is that it is gone.
func (db *DB) DeleteGrant(ctx context.Context, id string) error {
	if _, err := db.execWrite(ctx, `DELETE FROM grants WHERE id = ?`, id); err != nil {
		return fmt.Errorf("delete grant %s: %w", id, err)
	}
	return nil
}
