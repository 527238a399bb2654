package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Role says who wrote a message.
type Role string

// Message roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleSystem    Role = "system"
)

// Status is where a message or a part stands.
type Status string

// Statuses. A message is streaming, complete or error; a part may also be pending (a tool
// call not started) or running (a tool call in progress).
const (
	StatusStreaming Status = "streaming"
	StatusPending   Status = "pending"
	StatusRunning   Status = "running"
	StatusComplete  Status = "complete"
	StatusError     Status = "error"
)

// PartKind says what a part holds.
type PartKind string

// Part kinds. A tool_call part holds the model's call (name, call id, arguments) and,
// once the call has run, its outcome on the same row. A tool_result part holds an outcome
// that arrives on its own, apart from its call. An image part holds an image a person sent
// with a message: its media type and bytes (see CheckImage).
const (
	PartText       PartKind = "text"
	PartToolCall   PartKind = "tool_call"
	PartToolResult PartKind = "tool_result"
	PartImage      PartKind = "image"
	// PartCompaction is a compaction's summary (Text) of the session's messages up to a
	// seq, which the model is sent in their place; Args holds CompactionInfo as JSON.
	PartCompaction PartKind = "compaction"
	// PartResource is a resource of an imported MCP server a person attached to a message,
	// as it read when the message was sent: Args holds ResourceInfo as JSON, MediaType the
	// resource's MIME type ("" when its server gave none), Text a text resource's contents
	// and Data a binary one's bytes (see CheckResource).
	PartResource PartKind = "resource"
)

// ResourceInfo names an attached resource (a resource part's Args, as JSON): the MCP server
// it came from (its name in mcp.json, and the workspace whose .jean2/mcp.json names it, ""
// for $JEAN2_HOME/mcp.json) and its URI; or, for a workspace file a person mentioned
// (@path), its Path relative to the workspace folder (Server and URI empty).
type ResourceInfo struct {
	Server      string `json:"server,omitempty"`
	WorkspaceID string `json:"workspaceId,omitempty"`
	URI         string `json:"uri,omitempty"`
	Path        string `json:"path,omitempty"`
}

// MaxResourceBytes is the most one attached resource may hold (its text or its bytes): a
// MiB of text is already some 250k tokens, more than most models' windows.
const MaxResourceBytes = 1 << 20

// ErrBadResource is wrapped by CheckResource's errors.
var ErrBadResource = errors.New("unusable resource")

// CheckResource says what is wrong with a resource part: Args that do not name a server
// and a URI, both text and bytes, or more than MaxResourceBytes.
func CheckResource(p Part) error {
	var info ResourceInfo
	if err := json.Unmarshal([]byte(p.Args), &info); err != nil || (info.Server == "" || info.URI == "") == (info.Path == "") {
		return fmt.Errorf("%w: its args must be JSON naming the server and the uri ({\"server\",\"uri\"}) or a workspace file ({\"path\"}), not %q", ErrBadResource, p.Args)
	}
	limit, what := MaxResourceBytes, fmt.Sprintf("resource %s of MCP server %s", info.URI, info.Server)
	if info.Path != "" {
		what = "workspace file " + info.Path
		if CheckImage(p.MediaType, p.Data) == nil {
			limit = MaxImageBytes // a mentioned image may be as large as an attached one
		}
	}
	switch {
	case p.Text != "" && len(p.Data) > 0:
		return fmt.Errorf("%w: %s holds both text and bytes; keep one", ErrBadResource, what)
	case len(p.Text) > MaxResourceBytes || len(p.Data) > limit:
		return fmt.Errorf("%w: %s is %d bytes, more than the %d (%d MiB) a message may carry; attach a smaller one",
			ErrBadResource, what, max(len(p.Text), len(p.Data)), limit, limit>>20)
	}
	return nil
}

// CompactionInfo is what a compaction part says of what it replaced (its Args, as JSON).
type CompactionInfo struct {
	UpToSeq      int64 `json:"upToSeq"`      // the messages up to this seq are summarized
	Messages     int   `json:"messages"`     // how many messages this compaction summarized
	TokensBefore int   `json:"tokensBefore"` // the estimated request before, in tokens
	TokensAfter  int   `json:"tokensAfter"`  // and after
	Manual       bool  `json:"manual,omitempty"`
}

// Message is one message of a session with its parts in order.
type Message struct {
	ID        string    `json:"id"`
	SessionID string    `json:"sessionId"`
	Seq       int64     `json:"seq"` // 1, 2, 3… within the session, in the order added
	Role      Role      `json:"role"`
	Content   string    `json:"content"`
	Status    Status    `json:"status"`
	Provider  string    `json:"provider,omitempty"` // for an assistant message: who wrote it
	Model     string    `json:"model,omitempty"`
	Finish    string    `json:"finish,omitempty"` // why the model stopped: stop, tool_calls, length…
	Error     string    `json:"error,omitempty"`
	TokensIn  int64     `json:"tokensIn"`
	TokensOut int64     `json:"tokensOut"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	Parts     []Part    `json:"parts"`
}

// Part is one piece of a message: a run of text, or a tool call and its outcome.
type Part struct {
	ID        string   `json:"id"`
	MessageID string   `json:"messageId"`
	Seq       int64    `json:"seq"` // 1, 2, 3… within the message
	Kind      PartKind `json:"kind"`
	Text      string   `json:"text,omitempty"`
	ToolName  string   `json:"toolName,omitempty"`
	CallID    string   `json:"callId,omitempty"`
	// Args are the call's arguments exactly as the model wrote them; they may not parse.
	Args string `json:"args,omitempty"`
	// Result is what the model sees of the outcome: usually JSON, a preview with a note
	// when the result overflowed. Never holds the visualization.
	Result string `json:"result,omitempty"`
	// Visualization is the tool's visualization, for people only; JSON or nil.
	Visualization json.RawMessage `json:"visualization,omitempty"`
	Status        Status          `json:"status"`
	Duration      time.Duration   `json:"duration"` // stored in milliseconds
	Error         string          `json:"error,omitempty"`
	// MediaType and Data are an image part's: image/png, image/jpeg, image/gif or
	// image/webp, and the image's bytes (base64 in JSON); or a resource part's MIME type
	// and, for a binary resource, its bytes.
	MediaType string `json:"mediaType,omitempty"`
	Data      []byte `json:"data,omitempty"`
	// ToolHash is the content hash of the tool version that ran a tool call (folder tools):
	// a grant given from the call's refusal goes to that version, never to one that
	// replaced it unseen.
	ToolHash  string    `json:"toolHash,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// MarshalJSON writes the part with "durationMs", its duration in whole milliseconds
// (rounded), beside "duration" (nanoseconds, as time.Duration marshals): clients want
// milliseconds, and Go clients decoding a Part read "duration".
func (p Part) MarshalJSON() ([]byte, error) {
	type plain Part // without this method
	return json.Marshal(struct {
		plain
		DurationMs int64 `json:"durationMs"`
	}{plain(p), p.Duration.Round(time.Millisecond).Milliseconds()})
}

func checkMessage(m *Message) error {
	switch m.Role {
	case RoleUser, RoleAssistant, RoleSystem:
	default:
		return fmt.Errorf("role %q is not one of user, assistant, system", m.Role)
	}
	if m.Status == "" {
		m.Status = StatusComplete
	}
	switch m.Status {
	case StatusStreaming, StatusComplete, StatusError:
	default:
		return fmt.Errorf("message status %q is not one of streaming, complete, error", m.Status)
	}
	return nil
}

func checkPart(p *Part) error {
	switch p.Kind {
	case PartToolCall, PartToolResult:
		if err := checkToolContent(*p); err != nil {
			return err
		}
	case PartText, PartCompaction:
		if p.MediaType != "" || len(p.Data) > 0 {
			return fmt.Errorf("a %s part holds no media type nor data: only image, resource and tool parts do", p.Kind)
		}
	case PartImage:
		if err := CheckImage(p.MediaType, p.Data); err != nil {
			return err
		}
	case PartResource:
		if err := CheckResource(*p); err != nil {
			return err
		}
	default:
		return fmt.Errorf("part kind %q is not one of text, tool_call, tool_result, image, compaction, resource", p.Kind)
	}
	if p.Status == "" {
		p.Status = StatusComplete
	}
	switch p.Status {
	case StatusStreaming, StatusPending, StatusRunning, StatusComplete, StatusError:
	default:
		return fmt.Errorf("part status %q is not one of streaming, pending, running, complete, error", p.Status)
	}
	if len(p.Visualization) > 0 && !json.Valid(p.Visualization) {
		return errors.New("the visualization is not valid JSON")
	}
	return nil
}

// AppendMessage adds m at the end of its session and returns it as stored: a fresh ID when
// m has none, the next Seq, timestamps, an empty Status taken as complete. m.Parts, if any,
// are added with it in the same transaction. The session's UpdatedAt moves to now.
func (db *DB) AppendMessage(ctx context.Context, m Message) (Message, error) {
	var out Message
	err := db.batch(ctx, func(tx *Tx) error {
		var err error
		out, err = tx.AppendMessage(ctx, m)
		return err
	})
	if err != nil {
		return Message{}, wrapBatch(err, "append message %s to session %s", out.ID, m.SessionID)
	}
	return out, nil
}

// AppendMessage is DB.AppendMessage within the batch.
func (tx *Tx) AppendMessage(ctx context.Context, m Message) (Message, error) {
	if err := checkMessage(&m); err != nil {
		return Message{}, fmt.Errorf("append message to session %s: %w", m.SessionID, err)
	}
	for i := range m.Parts {
		if err := checkPart(&m.Parts[i]); err != nil {
			return Message{}, fmt.Errorf("append message to session %s: part %d: %w", m.SessionID, i+1, err)
		}
	}
	if m.ID == "" {
		m.ID = NewID("msg_")
	}
	if err := tx.appendMessage(ctx, &m); err != nil {
		return Message{}, fmt.Errorf("append message %s to session %s: %w", m.ID, m.SessionID, err)
	}
	if m.Parts == nil {
		m.Parts = []Part{}
	}
	return m, nil
}

func (tx *Tx) appendMessage(ctx context.Context, m *Message) error {
	t := now()
	m.CreatedAt, m.UpdatedAt = toTime(t), toTime(t)
	err := tx.stmt(ctx, stmtInsertMessage).QueryRowContext(ctx,
		m.ID, m.SessionID, m.Role, m.Content, m.Status, m.Provider, m.Model, m.Finish, m.Error, m.TokensIn, m.TokensOut, t).Scan(&m.Seq)
	switch {
	case isForeignKey(err):
		return fmt.Errorf("session %s: %w", m.SessionID, ErrNotFound)
	case isUnique(err):
		return fmt.Errorf("the id is taken: %w", ErrConflict)
	case err != nil:
		return err
	}
	// The session's updated_at moves with the batch's event numbering, or at its commit:
	// one write of the session's row instead of two.
	tx.touch(m.SessionID, t)
	// The message is new: its parts are numbered from 1 without asking the database.
	for i := range m.Parts {
		p := &m.Parts[i]
		p.MessageID, p.Seq = m.ID, int64(i+1)
		if err := tx.insertPart(ctx, p, t, false); err != nil {
			return fmt.Errorf("part %d: %w", i+1, err)
		}
	}
	return nil
}

// UpdateMessage saves the parts of m that change as it streams and ends: content, status,
// provider, model, finish, error and token counts. Parts are saved on their own.
func (db *DB) UpdateMessage(ctx context.Context, m Message) error {
	if err := checkMessage(&m); err != nil {
		return fmt.Errorf("update message %s: %w", m.ID, err)
	}
	if err := affected(db.execStmt(ctx, stmtUpdateMessage, updateMessageArgs(m)...)); err != nil {
		return fmt.Errorf("update message %s: %w", m.ID, err)
	}
	return nil
}

// UpdateMessage is DB.UpdateMessage within the batch.
func (tx *Tx) UpdateMessage(ctx context.Context, m Message) error {
	if err := checkMessage(&m); err != nil {
		return fmt.Errorf("update message %s: %w", m.ID, err)
	}
	if err := affected(tx.stmt(ctx, stmtUpdateMessage).ExecContext(ctx, updateMessageArgs(m)...)); err != nil {
		return fmt.Errorf("update message %s: %w", m.ID, err)
	}
	return nil
}

func updateMessageArgs(m Message) []any {
	return []any{m.Content, m.Status, m.Provider, m.Model, m.Finish, m.Error, m.TokensIn, m.TokensOut, now(), m.ID}
}

const messageColumns = `id, session_id, seq, role, content, status, provider, model, finish, error, tokens_in, tokens_out, created_at, updated_at`

func scanMessage(row interface{ Scan(...any) error }) (Message, error) {
	var m Message
	var created, updated int64
	err := row.Scan(&m.ID, &m.SessionID, &m.Seq, &m.Role, &m.Content, &m.Status, &m.Provider, &m.Model, &m.Finish, &m.Error,
		&m.TokensIn, &m.TokensOut, &created, &updated)
	if err != nil {
		return Message{}, err
	}
	m.CreatedAt, m.UpdatedAt = toTime(created), toTime(updated)
	m.Parts = []Part{}
	return m, nil
}

// Message returns the message with id and its parts.
func (db *DB) Message(ctx context.Context, id string) (Message, error) {
	m, err := scanMessage(db.read.QueryRowContext(ctx, `SELECT `+messageColumns+` FROM messages WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return Message{}, fmt.Errorf("get message %s: %w", id, err)
	}
	parts, err := partsOf(ctx, db.read, `message_id = ?`, id)
	if err != nil {
		return Message{}, fmt.Errorf("get parts of message %s: %w", id, err)
	}
	m.Parts = parts
	return m, nil
}

// ListMessages returns every message of a session in order, each with its parts in order.
func (db *DB) ListMessages(ctx context.Context, sessionID string) ([]Message, error) {
	return db.ListMessagesAfter(ctx, sessionID, 0, 0)
}

// ListMessagesAfter returns the messages of a session whose Seq is above afterSeq, in
// order, with their parts; at most limit of them when limit is above zero.
func (db *DB) ListMessagesAfter(ctx context.Context, sessionID string, afterSeq int64, limit int) ([]Message, error) {
	if limit <= 0 {
		limit = noLimit
	}
	// One read transaction, so the parts match the messages even while a turn writes.
	tx, err := db.read.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list messages of session %s: %w", sessionID, err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only: nothing to undo
	msgs, err := scanMessages(tx.StmtContext(ctx, db.stmts.read[stmtListMessages]).QueryContext(ctx, sessionID, afterSeq, limit))
	if err != nil {
		return nil, fmt.Errorf("list messages of session %s: %w", sessionID, err)
	}
	if len(msgs) == 0 {
		return msgs, nil
	}
	// One query for the parts of all the messages listed, not one per message.
	first, last := msgs[0].Seq, msgs[len(msgs)-1].Seq
	prows, err := tx.StmtContext(ctx, db.stmts.read[stmtListParts]).QueryContext(ctx, sessionID, first, last)
	var parts []Part
	if err == nil {
		parts, err = scanParts(prows)
	}
	if err != nil {
		return nil, fmt.Errorf("list parts of session %s: %w", sessionID, err)
	}
	attachParts(msgs, parts)
	return msgs, nil
}

// scanMessages reads the messages a query returned (messageColumns), closing its rows.
func scanMessages(rows *sql.Rows, err error) ([]Message, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	msgs := []Message{}
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, m)
	}
	return msgs, rows.Err()
}

// attachParts gives each message its parts (in the order given); parts of other messages
// are ignored.
func attachParts(msgs []Message, parts []Part) {
	index := make(map[string]int, len(msgs))
	for i, m := range msgs {
		index[m.ID] = i
	}
	for _, p := range parts {
		if i, ok := index[p.MessageID]; ok {
			msgs[i].Parts = append(msgs[i].Parts, p)
		}
	}
}

// DeleteMessagesFrom removes the messages of a session from seq on (with their parts and
// the ledgers filed under them), as when a conversation is cut back to an earlier point.
// It returns how many messages went.
func (db *DB) DeleteMessagesFrom(ctx context.Context, sessionID string, seq int64) (int64, error) {
	res, err := db.execWrite(ctx, `DELETE FROM messages WHERE session_id = ? AND seq >= ?`, sessionID, seq)
	if err != nil {
		return 0, fmt.Errorf("delete messages of session %s from %d: %w", sessionID, seq, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("delete messages of session %s from %d: %w", sessionID, seq, err)
	}
	return n, nil
}

// AppendPart adds p at the end of its message and returns it as stored: a fresh ID when p
// has none, the next Seq, timestamps, an empty Status taken as complete.
func (db *DB) AppendPart(ctx context.Context, p Part) (Part, error) {
	var out Part
	err := db.batch(ctx, func(tx *Tx) error {
		var err error
		out, err = tx.AppendPart(ctx, p)
		return err
	})
	if err != nil {
		return Part{}, wrapBatch(err, "append part %s to message %s", out.ID, p.MessageID)
	}
	return out, nil
}

// AppendPart is DB.AppendPart within the batch.
func (tx *Tx) AppendPart(ctx context.Context, p Part) (Part, error) {
	if err := checkPart(&p); err != nil {
		return Part{}, fmt.Errorf("append part to message %s: %w", p.MessageID, err)
	}
	if err := tx.insertPart(ctx, &p, now(), true); err != nil {
		return Part{}, fmt.Errorf("append part %s to message %s: %w", p.ID, p.MessageID, err)
	}
	return p, nil
}

// insertPart stores p; with nextSeq its seq is the next of its message, else p.Seq as set.
func (tx *Tx) insertPart(ctx context.Context, p *Part, t int64, nextSeq bool) error {
	if p.ID == "" {
		p.ID = NewID("prt_")
	}
	p.CreatedAt, p.UpdatedAt = toTime(t), toTime(t)
	var err error
	if nextSeq {
		err = tx.stmt(ctx, stmtInsertPartNextSeq).QueryRowContext(ctx,
			p.ID, p.MessageID, p.Kind, p.Text, p.ToolName, p.CallID, nullString(p.Args), nullString(p.Result),
			nullRaw(p.Visualization), p.Status, p.Duration.Milliseconds(), p.Error, p.MediaType, nullBytes(p.Data), t, p.ToolHash).Scan(&p.Seq)
	} else {
		_, err = tx.stmt(ctx, stmtInsertPart).ExecContext(ctx,
			p.ID, p.MessageID, p.Seq, p.Kind, p.Text, p.ToolName, p.CallID, nullString(p.Args), nullString(p.Result),
			nullRaw(p.Visualization), p.Status, p.Duration.Milliseconds(), p.Error, p.MediaType, nullBytes(p.Data), t, t, p.ToolHash)
	}
	switch {
	case isForeignKey(err):
		return fmt.Errorf("message %s: %w", p.MessageID, ErrNotFound)
	case isUnique(err):
		return fmt.Errorf("part id %s is taken: %w", p.ID, ErrConflict)
	}
	return err
}

// UpdatePart saves what changes on a part as it streams and runs: text, tool name, call
// id, arguments, result, visualization, status, duration and error. An image part's media
// type and bytes never change.
func (db *DB) UpdatePart(ctx context.Context, p Part) error {
	if err := checkPart(&p); err != nil {
		return fmt.Errorf("update part %s: %w", p.ID, err)
	}
	if err := affected(db.execStmt(ctx, stmtUpdatePart, updatePartArgs(p)...)); err != nil {
		return fmt.Errorf("update part %s: %w", p.ID, err)
	}
	return nil
}

// UpdatePart is DB.UpdatePart within the batch.
func (tx *Tx) UpdatePart(ctx context.Context, p Part) error {
	if err := checkPart(&p); err != nil {
		return fmt.Errorf("update part %s: %w", p.ID, err)
	}
	if err := affected(tx.stmt(ctx, stmtUpdatePart).ExecContext(ctx, updatePartArgs(p)...)); err != nil {
		return fmt.Errorf("update part %s: %w", p.ID, err)
	}
	return nil
}

func updatePartArgs(p Part) []any {
	return []any{p.Text, p.ToolName, p.CallID, nullString(p.Args), nullString(p.Result), nullRaw(p.Visualization),
		p.Status, p.Duration.Milliseconds(), p.Error, p.MediaType, nullBytes(p.Data), p.ToolHash, now(), p.ID}
}

// AppendPartText adds delta to the end of a streaming part's text without reading it
// back. Each call is one commit: a caller streaming tokens should gather them and call
// this a few times a second, not once per token (or write them in a Batch with the rest).
func (db *DB) AppendPartText(ctx context.Context, id, delta string) error {
	if err := affected(db.execStmt(ctx, stmtAppendPartText, delta, now(), id)); err != nil {
		return fmt.Errorf("append text to part %s: %w", id, err)
	}
	return nil
}

// AppendPartText is DB.AppendPartText within the batch.
func (tx *Tx) AppendPartText(ctx context.Context, id, delta string) error {
	if err := affected(tx.stmt(ctx, stmtAppendPartText).ExecContext(ctx, delta, now(), id)); err != nil {
		return fmt.Errorf("append text to part %s: %w", id, err)
	}
	return nil
}

// UpdatePartText replaces a part's text.
func (db *DB) UpdatePartText(ctx context.Context, id, text string) error {
	err := affected(db.execWrite(ctx, `UPDATE parts SET text = ?, updated_at = ? WHERE id = ?`, text, now(), id))
	if err != nil {
		return fmt.Errorf("update text of part %s: %w", id, err)
	}
	return nil
}

// Part returns the part with id.
func (db *DB) Part(ctx context.Context, id string) (Part, error) {
	parts, err := partsOf(ctx, db.read, `id = ?`, id)
	if err == nil && len(parts) == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return Part{}, fmt.Errorf("get part %s: %w", id, err)
	}
	return parts[0], nil
}

// partsQuery selects the parts matching where, ordered by message and seq.
func partsQuery(where string) string {
	return `SELECT p.id, p.message_id, p.seq, p.kind, p.text, p.tool_name, p.call_id, p.args, p.result,
		p.visualization, p.status, p.duration_ms, p.error, p.created_at, p.updated_at, p.media_type, p.data, p.tool_hash
		FROM parts p WHERE ` + where + ` ORDER BY p.message_id, p.seq`
}

// partsOf returns the parts matching where, ordered by message and seq.
func partsOf(ctx context.Context, q querier, where string, args ...any) ([]Part, error) {
	rows, err := q.QueryContext(ctx, partsQuery(where), args...)
	if err != nil {
		return nil, err
	}
	return scanParts(rows)
}

// scanParts reads the rows of a partsQuery and closes them.
func scanParts(rows *sql.Rows) ([]Part, error) {
	defer rows.Close()
	out := []Part{}
	for rows.Next() {
		var p Part
		var args, result, vis sql.NullString
		var dur, created, updated int64
		if err := rows.Scan(&p.ID, &p.MessageID, &p.Seq, &p.Kind, &p.Text, &p.ToolName, &p.CallID, &args, &result,
			&vis, &p.Status, &dur, &p.Error, &created, &updated, &p.MediaType, &p.Data, &p.ToolHash); err != nil {
			return nil, err
		}
		p.Args, p.Result = args.String, result.String
		if vis.Valid {
			p.Visualization = json.RawMessage(vis.String)
		}
		p.Duration = time.Duration(dur) * time.Millisecond
		p.CreatedAt, p.UpdatedAt = toTime(created), toTime(updated)
		out = append(out, p)
	}
	return out, rows.Err()
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullBytes(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

func nullRaw(r json.RawMessage) any {
	if len(r) == 0 {
		return nil
	}
	return string(r)
}

// unfinishedWhere selects the messages a stopped server left unfinished; the partial indexes
// of migration 0004 serve both halves.
const unfinishedWhere = `status = 'streaming' OR id IN
	(SELECT message_id FROM parts WHERE status IN ('streaming', 'pending', 'running'))`

// UnfinishedMessages returns, with their parts, the messages a server that stopped without
// finishing its turns left behind: status streaming, or holding a part that is streaming,
// pending or running. Crash recovery seals them. Ordered by session, then seq.
func (db *DB) UnfinishedMessages(ctx context.Context) ([]Message, error) {
	tx, err := db.read.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list unfinished messages: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only: nothing to undo
	msgs, err := scanMessages(tx.QueryContext(ctx, `SELECT `+messageColumns+` FROM messages WHERE `+unfinishedWhere+`
		ORDER BY session_id, seq`))
	if err != nil {
		return nil, fmt.Errorf("list unfinished messages: %w", err)
	}
	if len(msgs) == 0 {
		return msgs, nil
	}
	parts, err := partsOf(ctx, tx, `message_id IN (SELECT id FROM messages WHERE `+unfinishedWhere+`)`)
	if err != nil {
		return nil, fmt.Errorf("list parts of unfinished messages: %w", err)
	}
	attachParts(msgs, parts)
	return msgs, nil
}
