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

// The tables of several instances on one database (migration 0011, docs/deploy.md): turn
// leases, the commands instances send each other, and the sessions each one has a client
// attached to. A single instance never touches them.

// ErrLeased is wrapped by AcquireLease when another instance holds the session's lease
// (errors.As a *LeaseHeldError to learn which).
var ErrLeased = errors.New("the session's turn runs on another instance")

// Lease says which instance runs a turn in a session, until when.
type Lease struct {
	SessionID  string    `json:"sessionId"`
	InstanceID string    `json:"instance"`
	TurnID     string    `json:"turnId,omitempty"`
	AcquiredAt time.Time `json:"acquiredAt"`
	ExpiresAt  time.Time `json:"expiresAt"`
	// Epoch is this acquisition's own value, never given to another (migration 0012): the
	// holder's writes check it with FenceLease.
	Epoch string `json:"epoch,omitempty"`
}

// LeaseHeldError is AcquireLease's refusal: Held is the lease that stands.
type LeaseHeldError struct{ Held Lease }

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("session %s: %v: instance %s holds its lease until %s",
		e.Held.SessionID, ErrLeased, e.Held.InstanceID, e.Held.ExpiresAt.Format(time.RFC3339))
}

func (e *LeaseHeldError) Unwrap() error { return ErrLeased }

// AcquireLease gives instanceID the session's lease for ttl when no other instance holds an
// unexpired one (an expired lease is taken over: its holder is presumed dead). It fails with
// a *LeaseHeldError (ErrLeased) naming the holder, and ErrNotFound for a session that does
// not exist. The conditional upsert makes it safe for any number of instances at once:
// exactly one wins.
func (db *DB) AcquireLease(ctx context.Context, sessionID, instanceID, turnID string, ttl time.Duration) (Lease, error) {
	if sessionID == "" || instanceID == "" || ttl <= 0 {
		return Lease{}, fmt.Errorf("acquire the lease of session %q for instance %q: a session, an instance and a positive ttl (%s) are required", sessionID, instanceID, ttl)
	}
	t := now()
	exp := t + ttl.Milliseconds()
	epoch := NewID("epoch_")
	res, err := db.execWrite(ctx, `INSERT INTO turn_leases (session_id, instance_id, turn_id, acquired_at, expires_at, epoch)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (session_id) DO UPDATE SET instance_id = excluded.instance_id, turn_id = excluded.turn_id,
			acquired_at = excluded.acquired_at, expires_at = excluded.expires_at, epoch = excluded.epoch
		WHERE turn_leases.expires_at < ? OR turn_leases.instance_id = excluded.instance_id`,
		sessionID, instanceID, turnID, t, exp, epoch, t)
	switch {
	case isForeignKey(err):
		return Lease{}, fmt.Errorf("acquire the lease of session %s: %w", sessionID, ErrNotFound)
	case err != nil:
		return Lease{}, fmt.Errorf("acquire the lease of session %s for instance %s: %w", sessionID, instanceID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return Lease{}, fmt.Errorf("acquire the lease of session %s for instance %s: %w", sessionID, instanceID, err)
	}
	if n == 1 {
		return Lease{SessionID: sessionID, InstanceID: instanceID, TurnID: turnID, AcquiredAt: toTime(t), ExpiresAt: toTime(exp), Epoch: epoch}, nil
	}
	held, err := db.LeaseOf(ctx, sessionID)
	if err != nil {
		// Released between the upsert and the read: say it is taken anyway, the caller
		// tries again later rather than racing.
		held = Lease{SessionID: sessionID, InstanceID: "(unknown)", ExpiresAt: toTime(t)}
	}
	return Lease{}, &LeaseHeldError{Held: held}
}

// TakeExpiredLease gives instanceID the session's lease for ttl if the lease that stands is
// still expired's (the same acquisition, its epoch) and still expired: the claim of a reaper
// that listed it. Of several reapers, one wins; one that comes after the winner released
// the lease (the session sealed) finds nothing to take, where AcquireLease would give it a
// fresh lease and a second seal. A lost claim is ErrLeased.
func (db *DB) TakeExpiredLease(ctx context.Context, expired Lease, instanceID string, ttl time.Duration) (Lease, error) {
	if instanceID == "" || ttl <= 0 {
		return Lease{}, fmt.Errorf("take the expired lease of session %q for instance %q: an instance and a positive ttl (%s) are required", expired.SessionID, instanceID, ttl)
	}
	t := now()
	exp := t + ttl.Milliseconds()
	epoch := NewID("epoch_")
	res, err := db.execWrite(ctx, `UPDATE turn_leases SET instance_id = ?, turn_id = '', acquired_at = ?, expires_at = ?, epoch = ?
		WHERE session_id = ? AND instance_id = ? AND COALESCE(epoch, '') = ? AND expires_at < ?`,
		instanceID, t, exp, epoch, expired.SessionID, expired.InstanceID, expired.Epoch, t)
	if err != nil {
		return Lease{}, fmt.Errorf("take the expired lease of session %s for instance %s: %w", expired.SessionID, instanceID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return Lease{}, fmt.Errorf("take the expired lease of session %s (instance %s): %w: another instance took it or it was released", expired.SessionID, expired.InstanceID, ErrLeased)
	}
	return Lease{SessionID: expired.SessionID, InstanceID: instanceID, AcquiredAt: toTime(t), ExpiresAt: toTime(exp), Epoch: epoch}, nil
}

// RenewLeases moves the expiry of instanceID's leases of sessions to now+ttl and returns
// the sessions whose lease it no longer holds (another instance took it over, or it was
// released): their turns must stop.
func (db *DB) RenewLeases(ctx context.Context, instanceID string, sessions []string, ttl time.Duration) (lost []string, err error) {
	exp := now() + ttl.Milliseconds()
	for _, id := range sessions {
		res, err := db.execWrite(ctx, `UPDATE turn_leases SET expires_at = ? WHERE session_id = ? AND instance_id = ?`, exp, id, instanceID)
		if err != nil {
			return lost, fmt.Errorf("renew the lease of session %s for instance %s: %w", id, instanceID, err)
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			lost = append(lost, id)
		}
	}
	return lost, nil
}

// ReleaseLease drops instanceID's lease of the session; a lease another instance holds is
// left alone. Releasing a lease not held is no error.
func (db *DB) ReleaseLease(ctx context.Context, sessionID, instanceID string) error {
	if _, err := db.execWrite(ctx, `DELETE FROM turn_leases WHERE session_id = ? AND instance_id = ?`, sessionID, instanceID); err != nil {
		return fmt.Errorf("release the lease of session %s held by instance %s: %w", sessionID, instanceID, err)
	}
	return nil
}

// ReleaseLeasesOf drops every lease instanceID holds (a previous run of a restarted
// instance, whose turns its start sealed) and returns how many went.
func (db *DB) ReleaseLeasesOf(ctx context.Context, instanceID string) (int64, error) {
	res, err := db.execWrite(ctx, `DELETE FROM turn_leases WHERE instance_id = ?`, instanceID)
	if err != nil {
		return 0, fmt.Errorf("release the leases of instance %s: %w", instanceID, err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// ReleaseLease is DB.ReleaseLease within the batch: the lease goes with the batch's commit
// (the one that stores a turn's turn.finished, so no client hears of the end while the
// session is still claimed).
func (tx *Tx) ReleaseLease(ctx context.Context, sessionID, instanceID string) error {
	if _, err := tx.tx.ExecContext(ctx, `DELETE FROM turn_leases WHERE session_id = ? AND instance_id = ?`, sessionID, instanceID); err != nil {
		return fmt.Errorf("release the lease of session %s held by instance %s: %w", sessionID, instanceID, err)
	}
	return nil
}

// ErrLeaseLost is wrapped by FenceLease when the lease it checks is no longer the one the
// writer acquired: another instance took it over (and sealed the turn), or it was released.
var ErrLeaseLost = errors.New("the session's turn lease was lost to another instance")

// FenceLease is the first statement of a lease holder's write transaction: it fails with
// ErrLeaseLost, so that nothing of the transaction commits, unless the session's lease is
// still instanceID's at epoch. The check is an UPDATE of the lease row, which holds that
// row's lock until the transaction ends: a takeover (AcquireLease by another instance)
// waits for the commit, and a transaction that finds the lease taken over writes nothing.
// That is the fence of every write a turn makes (docs/store.md, "Fencing").
func (tx *Tx) FenceLease(ctx context.Context, sessionID, instanceID, epoch string) error {
	res, err := tx.tx.ExecContext(ctx, `UPDATE turn_leases SET epoch = epoch WHERE session_id = ? AND instance_id = ? AND epoch = ?`,
		sessionID, instanceID, epoch)
	if err != nil {
		return fmt.Errorf("check the lease of session %s held by instance %s: %w", sessionID, instanceID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("check the lease of session %s held by instance %s: %w", sessionID, instanceID, err)
	} else if n == 0 {
		return fmt.Errorf("session %s: instance %s (lease epoch %s): %w; this instance writes nothing more to it",
			sessionID, instanceID, epoch, ErrLeaseLost)
	}
	return nil
}

const leaseColumns = `session_id, instance_id, turn_id, acquired_at, expires_at, epoch`

func scanLeases(rows *sql.Rows, err error) ([]Lease, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Lease{}
	for rows.Next() {
		var l Lease
		var acq, exp int64
		if err := rows.Scan(&l.SessionID, &l.InstanceID, &l.TurnID, &acq, &exp, &l.Epoch); err != nil {
			return nil, err
		}
		l.AcquiredAt, l.ExpiresAt = toTime(acq), toTime(exp)
		out = append(out, l)
	}
	return out, rows.Err()
}

// LeaseOf returns the session's lease, expired or not; ErrNotFound when it has none.
func (db *DB) LeaseOf(ctx context.Context, sessionID string) (Lease, error) {
	ls, err := scanLeases(db.read.QueryContext(ctx, `SELECT `+leaseColumns+` FROM turn_leases WHERE session_id = ?`, sessionID))
	if err != nil {
		return Lease{}, fmt.Errorf("read the lease of session %s: %w", sessionID, err)
	}
	if len(ls) == 0 {
		return Lease{}, fmt.Errorf("the lease of session %s: %w", sessionID, ErrNotFound)
	}
	return ls[0], nil
}

// ExpiredLeases lists the leases whose expiry is before at, oldest first: the turns of
// instances that stopped renewing them.
func (db *DB) ExpiredLeases(ctx context.Context, at time.Time) ([]Lease, error) {
	ls, err := scanLeases(db.read.QueryContext(ctx, `SELECT `+leaseColumns+` FROM turn_leases WHERE expires_at < ? ORDER BY expires_at`, at.UnixMilli()))
	if err != nil {
		return nil, fmt.Errorf("list expired leases: %w", err)
	}
	return ls, nil
}

// LiveLeases lists the leases unexpired at at: the turns other instances are running.
func (db *DB) LiveLeases(ctx context.Context, at time.Time) ([]Lease, error) {
	ls, err := scanLeases(db.read.QueryContext(ctx, `SELECT `+leaseColumns+` FROM turn_leases WHERE expires_at >= ? ORDER BY session_id`, at.UnixMilli()))
	if err != nil {
		return nil, fmt.Errorf("list live leases: %w", err)
	}
	return ls, nil
}

// Command is an order one instance sends another: stop a session's turn, answer one of its
// asks. The target marks it done, with Error set when it failed.
type Command struct {
	ID         string          `json:"id"`
	InstanceID string          `json:"instance"` // the target
	SessionID  string          `json:"sessionId"`
	Kind       string          `json:"kind"`
	Body       json.RawMessage `json:"body"`
	CreatedAt  time.Time       `json:"createdAt"`
	Done       bool            `json:"done"`
	Error      string          `json:"error,omitempty"`
}

// SendCommand stores c for its target instance and returns it with its id and time.
func (db *DB) SendCommand(ctx context.Context, c Command) (Command, error) {
	if c.InstanceID == "" || c.Kind == "" {
		return Command{}, fmt.Errorf("send a command: the target instance (%q) and the kind (%q) are required", c.InstanceID, c.Kind)
	}
	if len(c.Body) == 0 {
		c.Body = json.RawMessage("{}")
	}
	if !json.Valid(c.Body) {
		return Command{}, fmt.Errorf("send command %s to instance %s: the body is not valid JSON", c.Kind, c.InstanceID)
	}
	c.ID, c.CreatedAt, c.Done, c.Error = NewID("cmd_"), toTime(now()), false, ""
	if _, err := db.execWrite(ctx, `INSERT INTO cluster_commands (id, instance_id, session_id, kind, body, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		c.ID, c.InstanceID, c.SessionID, c.Kind, string(c.Body), c.CreatedAt.UnixMilli()); err != nil {
		return Command{}, fmt.Errorf("send command %s to instance %s: %w", c.Kind, c.InstanceID, err)
	}
	return c, nil
}

const commandColumns = `id, instance_id, session_id, kind, body, created_at, done_at, error`

func scanCommands(rows *sql.Rows, err error) ([]Command, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Command{}
	for rows.Next() {
		var c Command
		var body string
		var created int64
		var done sql.NullInt64
		if err := rows.Scan(&c.ID, &c.InstanceID, &c.SessionID, &c.Kind, &body, &created, &done, &c.Error); err != nil {
			return nil, err
		}
		c.Body, c.CreatedAt, c.Done = json.RawMessage(body), toTime(created), done.Valid
		out = append(out, c)
	}
	return out, rows.Err()
}

// PendingCommands lists the commands sent to instanceID not done yet, oldest first.
func (db *DB) PendingCommands(ctx context.Context, instanceID string) ([]Command, error) {
	cs, err := scanCommands(db.read.QueryContext(ctx, `SELECT `+commandColumns+` FROM cluster_commands
		WHERE instance_id = ? AND done_at IS NULL ORDER BY created_at, id`, instanceID))
	if err != nil {
		return nil, fmt.Errorf("list the commands of instance %s: %w", instanceID, err)
	}
	return cs, nil
}

// CommandByID reads a command, to learn whether it is done; ErrNotFound when unknown.
func (db *DB) CommandByID(ctx context.Context, id string) (Command, error) {
	cs, err := scanCommands(db.read.QueryContext(ctx, `SELECT `+commandColumns+` FROM cluster_commands WHERE id = ?`, id))
	if err != nil {
		return Command{}, fmt.Errorf("read command %s: %w", id, err)
	}
	if len(cs) == 0 {
		return Command{}, fmt.Errorf("command %s: %w", id, ErrNotFound)
	}
	return cs[0], nil
}

// FinishCommand marks a command done, failed with errText when it is not "". A command
// done already keeps its first outcome (ErrNotFound then).
func (db *DB) FinishCommand(ctx context.Context, id, errText string) error {
	if err := affected(db.execWrite(ctx, `UPDATE cluster_commands SET done_at = ?, error = ? WHERE id = ? AND done_at IS NULL`, now(), errText, id)); err != nil {
		return fmt.Errorf("finish command %s: %w", id, err)
	}
	return nil
}

// PruneCommands drops the commands created before `before`, done or not (a command no one
// ran by then was for an instance that is gone), and returns how many went.
func (db *DB) PruneCommands(ctx context.Context, before time.Time) (int64, error) {
	res, err := db.execWrite(ctx, `DELETE FROM cluster_commands WHERE created_at < ?`, before.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("prune cluster commands: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// SetWatched records the sessions instanceID has a client attached to, until now+ttl:
// sessions not in the list lose its record. One transaction.
func (db *DB) SetWatched(ctx context.Context, instanceID string, sessions []string, ttl time.Duration) error {
	exp := now() + ttl.Milliseconds()
	err := db.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM cluster_watchers WHERE instance_id = ?`, instanceID); err != nil {
			return err
		}
		for _, id := range sessions {
			if _, err := tx.ExecContext(ctx, `INSERT INTO cluster_watchers (instance_id, session_id, expires_at) VALUES (?, ?, ?)
				ON CONFLICT (session_id, instance_id) DO UPDATE SET expires_at = excluded.expires_at`, instanceID, id, exp); err != nil {
				return err
			}
		}
		// Records of instances that stopped refreshing theirs go too.
		_, err := tx.ExecContext(ctx, `DELETE FROM cluster_watchers WHERE expires_at < ?`, now())
		return err
	})
	if err != nil {
		return fmt.Errorf("record the sessions instance %s watches (%s): %w", instanceID, strings.Join(sessions, ", "), err)
	}
	return nil
}

// AddWatched records that instanceID has a client attached to the session, until now+ttl,
// beside the sessions it recorded already.
func (db *DB) AddWatched(ctx context.Context, instanceID, sessionID string, ttl time.Duration) error {
	if _, err := db.execWrite(ctx, `INSERT INTO cluster_watchers (instance_id, session_id, expires_at) VALUES (?, ?, ?)
		ON CONFLICT (session_id, instance_id) DO UPDATE SET expires_at = excluded.expires_at`, instanceID, sessionID, now()+ttl.Milliseconds()); err != nil {
		return fmt.Errorf("record that instance %s watches session %s: %w", instanceID, sessionID, err)
	}
	return nil
}

// WatchedElsewhere reports whether an instance other than instanceID has a client attached
// to the session (an unexpired record).
func (db *DB) WatchedElsewhere(ctx context.Context, sessionID, instanceID string) (bool, error) {
	var n int
	err := db.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM cluster_watchers WHERE session_id = ? AND instance_id <> ? AND expires_at >= ?`,
		sessionID, instanceID, now()).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("who watches session %s: %w", sessionID, err)
	}
	return n > 0, nil
}

// PostgresURL is the URL of the PostgreSQL server the database is on, for a connection of
// its own (the cluster's LISTEN); "" for SQLite.
func (db *DB) PostgresURL() string {
	if db.dialect != dialectPostgres {
		return ""
	}
	return db.url
}

// LastEventSeqs is LastEventSeq of many sessions in one query per 500 ("" and sessions
// not found are read one by one): what an instance polls for the sessions it has clients
// of.
func (db *DB) LastEventSeqs(ctx context.Context, sessionIDs []string) (map[string]int64, error) {
	out := make(map[string]int64, len(sessionIDs))
	var ids []string
	for _, id := range sessionIDs {
		if id != "" {
			ids = append(ids, id)
		}
	}
	for start := 0; start < len(ids); start += 500 {
		chunk := ids[start:min(start+500, len(ids))]
		args := make([]any, len(chunk))
		marks := make([]string, len(chunk))
		for i, id := range chunk {
			args[i], marks[i] = id, "?"
		}
		rows, err := db.read.QueryContext(ctx, `SELECT id, last_event_seq FROM sessions WHERE id IN (`+strings.Join(marks, ", ")+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("last events of %d sessions: %w", len(chunk), err)
		}
		for rows.Next() {
			var id string
			var seq int64
			if err := rows.Scan(&id, &seq); err != nil {
				rows.Close()
				return nil, fmt.Errorf("last events of %d sessions: %w", len(chunk), err)
			}
			out[id] = seq
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("last events of %d sessions: %w", len(chunk), err)
		}
	}
	for _, id := range sessionIDs {
		if _, ok := out[id]; ok {
			continue
		}
		seq, err := db.LastEventSeq(ctx, id)
		if err != nil {
			return nil, err
		}
		out[id] = seq
	}
	return out, nil
}
