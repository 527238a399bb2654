package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

func event(typ string) NewEvent { return NewEvent{Type: typ, Payload: json.RawMessage(`{"x":1}`)} }

// A batch's writes commit together or not at all: a write that fails, an error of the
// caller or a panic leave nothing behind, and the one writer is free again afterwards.
func TestBatchCommitsAllOrNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		s := mustSession(t, db, mustWorkspace(t, db, "/b").ID)

		var msg Message
		var evs []Event
		err := db.Batch(ctx, func(tx *Tx) error {
			var err error
			if msg, err = tx.AppendMessage(ctx, Message{SessionID: s.ID, Role: RoleAssistant, Status: StatusStreaming,
				Parts: []Part{{Kind: PartText, Status: StatusStreaming, Text: "a"}}}); err != nil {
				return err
			}
			if err := tx.AppendPartText(ctx, msg.Parts[0].ID, "b"); err != nil {
				return err
			}
			p, err := tx.AppendPart(ctx, Part{MessageID: msg.ID, Kind: PartToolCall, Status: StatusPending, CallID: "c1", ToolName: "t"})
			if err != nil {
				return err
			}
			if p.Seq != 2 {
				t.Errorf("second part seq %d", p.Seq)
			}
			p.Status = StatusRunning
			if err := tx.UpdatePart(ctx, p); err != nil {
				return err
			}
			msg.Status = StatusComplete
			if err := tx.UpdateMessage(ctx, msg); err != nil {
				return err
			}
			evs, err = tx.AppendEvents(ctx, s.ID, event("a"), event("b"))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		got, err := db.Message(ctx, msg.ID)
		if err != nil || got.Status != StatusComplete || len(got.Parts) != 2 || got.Parts[0].Text != "ab" || got.Parts[1].Status != StatusRunning {
			t.Fatalf("after the batch: %+v, %v", got, err)
		}
		if len(evs) != 2 || evs[0].Seq != 1 || evs[1].Seq != 2 {
			t.Fatalf("events %+v", evs)
		}

		boom := errors.New("boom")
		countMessages := func() int {
			msgs, err := db.ListMessages(ctx, s.ID)
			if err != nil {
				t.Fatal(err)
			}
			return len(msgs)
		}
		for name, fail := range map[string]func(tx *Tx) error{
			"caller error": func(*Tx) error { return boom },
			"write error": func(tx *Tx) error {
				_, err := tx.AppendPart(ctx, Part{MessageID: "msg_nope", Kind: PartText})
				return err
			},
			"panic": func(*Tx) error { panic(boom) },
		} {
			func() {
				defer func() { _ = recover() }()
				err := db.Batch(ctx, func(tx *Tx) error {
					if _, err := tx.AppendMessage(ctx, Message{SessionID: s.ID, Role: RoleUser, Content: "lost"}); err != nil {
						return err
					}
					if _, err := tx.AppendEvents(ctx, s.ID, event("lost")); err != nil {
						return err
					}
					return fail(tx)
				})
				if name == "caller error" && !errors.Is(err, boom) {
					t.Errorf("%s: the caller's error did not come back: %v", name, err)
				}
				if name == "write error" && !errors.Is(err, ErrNotFound) {
					t.Errorf("%s: %v", name, err)
				}
			}()
			if n := countMessages(); n != 1 {
				t.Fatalf("%s: %d messages: a failed batch left a write behind", name, n)
			}
			if last, err := db.LastEventSeq(ctx, s.ID); err != nil || last != 2 {
				t.Fatalf("%s: last event seq %d, %v: a failed batch used numbers", name, last, err)
			}
		}
		// The writer is free: a plain write goes through at once.
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, err := db.AppendEvents(wctx, s.ID, event("after")); err != nil {
			t.Fatalf("write after the failed batches: %v", err)
		}
	})
}

// More events than one prepared INSERT holds are numbered in order; the server's own log,
// which has no session row, is numbered too, and numbers survive pruning.
func TestAppendEventsInChunksAndWithoutASession(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		s := mustSession(t, db, mustWorkspace(t, db, "/e").ID)
		many := make([]NewEvent, 2*maxEventRows+3)
		for i := range many {
			many[i] = NewEvent{Type: "n", Payload: json.RawMessage(`{"i":` + string(rune('0'+i%10)) + `}`)}
		}
		for _, sid := range []string{s.ID, ""} {
			out, err := db.AppendEvents(ctx, sid, many...)
			if err != nil {
				t.Fatal(err)
			}
			stored, err := db.EventsAfter(ctx, sid, 0, 0)
			if err != nil || len(stored) != len(many) {
				t.Fatalf("session %q: %d stored, %v", sid, len(stored), err)
			}
			for i := range out {
				if out[i].Seq != int64(i+1) || stored[i].Seq != int64(i+1) || !bytes.Equal(stored[i].Payload, many[i].Payload) {
					t.Fatalf("session %q: event %d: %+v / %+v", sid, i, out[i], stored[i])
				}
			}
			if _, err := db.PruneEvents(ctx, sid, int64(len(many))); err != nil {
				t.Fatal(err)
			}
			next, err := db.AppendEvents(ctx, sid, event("next"))
			if err != nil || next[0].Seq != int64(len(many)+1) {
				t.Fatalf("session %q: after pruning: %+v, %v", sid, next, err)
			}
			if last, err := db.LastEventSeq(ctx, sid); err != nil || last != int64(len(many)+1) {
				t.Fatalf("session %q: LastEventSeq %d, %v", sid, last, err)
			}
		}
	})
}

// An image part keeps its media type and bytes; CheckImage refuses what a provider would.
func TestImagePartsAndCheckImage(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		s := mustSession(t, db, mustWorkspace(t, db, "/i").ID)
		png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0, 1, 2, 255}, 1000)...)
		m, err := db.AppendMessage(ctx, Message{SessionID: s.ID, Role: RoleUser, Content: "look",
			Parts: []Part{{Kind: PartImage, MediaType: "image/png", Data: png}}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := db.ListMessages(ctx, s.ID)
		if err != nil || len(got) != 1 || len(got[0].Parts) != 1 {
			t.Fatalf("%+v, %v", got, err)
		}
		if p := got[0].Parts[0]; p.Kind != PartImage || p.MediaType != "image/png" || !bytes.Equal(p.Data, png) || p.MessageID != m.ID {
			t.Fatalf("image part %+v", p)
		}
		for _, c := range []struct {
			mediaType string
			data      []byte
			want      string
		}{
			{"image/bmp", png, "is not image/png, image/jpeg, image/gif or image/webp"},
			{"image/jpeg", png, "are not a image/jpeg image"},
			{"image/png", nil, "has no bytes"},
			{"image/gif", append([]byte("GIF89a"), make([]byte, MaxImageBytes)...), "more than the 5242880 (5 MiB) allowed"},
		} {
			err := CheckImage(c.mediaType, c.data)
			if !errors.Is(err, ErrBadImage) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("CheckImage(%s, %d bytes) = %v, want %q", c.mediaType, len(c.data), err, c.want)
			}
			if _, err := db.AppendMessage(ctx, Message{SessionID: s.ID, Role: RoleUser,
				Parts: []Part{{Kind: PartImage, MediaType: c.mediaType, Data: c.data}}}); !errors.Is(err, ErrBadImage) {
				t.Errorf("stored a bad image (%s): %v", c.want, err)
			}
		}
		for _, ok := range [][2]string{{"image/jpeg", "\xff\xd8\xff\xe0rest"}, {"image/gif", "GIF87a..."}, {"image/webp", "RIFF\x10\x00\x00\x00WEBPVP8 "}} {
			if err := CheckImage(ok[0], []byte(ok[1])); err != nil {
				t.Errorf("CheckImage(%s): %v", ok[0], err)
			}
		}
		if _, err := db.AppendMessage(ctx, Message{SessionID: s.ID, Role: RoleUser,
			Parts: []Part{{Kind: PartText, Text: "x", MediaType: "image/png"}}}); err == nil {
			t.Fatal("a text part with a media type was stored")
		}
	})
}

// A resource part keeps what names it (server, uri), its MIME type and its text or bytes,
// and survives a fork; CheckResource refuses one that names nothing, holds both or is too big.
func TestResourcePartsAndCheckResource(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		s := mustSession(t, db, mustWorkspace(t, db, "/r").ID)
		args := `{"server":"docs","uri":"note://readme"}`
		blob := []byte{0, 1, 2, 255}
		m, err := db.AppendMessage(ctx, Message{SessionID: s.ID, Role: RoleUser, Content: "read this",
			Parts: []Part{
				{Kind: PartResource, Args: args, MediaType: "text/markdown", Text: "# Hello"},
				{Kind: PartResource, Args: `{"server":"docs","uri":"bin://x"}`, MediaType: "application/octet-stream", Data: blob},
			}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := db.ListMessages(ctx, s.ID)
		if err != nil || len(got) != 1 || len(got[0].Parts) != 2 {
			t.Fatalf("%+v, %v", got, err)
		}
		if p := got[0].Parts[0]; p.Kind != PartResource || p.Args != args || p.MediaType != "text/markdown" || p.Text != "# Hello" || p.MessageID != m.ID {
			t.Fatalf("text resource part %+v", p)
		}
		if p := got[0].Parts[1]; p.Kind != PartResource || !bytes.Equal(p.Data, blob) || p.Text != "" {
			t.Fatalf("binary resource part %+v", p)
		}
		fork, err := db.ForkSession(ctx, s.ID, m.Seq, "fork")
		if err != nil {
			t.Fatal(err)
		}
		if fm, err := db.ListMessages(ctx, fork.ID); err != nil || len(fm) != 1 || len(fm[0].Parts) != 2 || fm[0].Parts[0].Text != "# Hello" {
			t.Fatalf("forked: %+v, %v", fm, err)
		}
		for _, c := range []struct {
			part Part
			want string
		}{
			{Part{Kind: PartResource, Args: `{"uri":"x://y"}`, Text: "t"}, "must be JSON naming the server and the uri"},
			{Part{Kind: PartResource, Args: "not json", Text: "t"}, "must be JSON naming the server and the uri"},
			{Part{Kind: PartResource, Args: args, Text: "t", Data: blob}, "holds both text and bytes"},
			{Part{Kind: PartResource, Args: args, Text: strings.Repeat("a", MaxResourceBytes+1)}, "more than the 1048576 (1 MiB)"},
			{Part{Kind: PartResource, Args: args, Data: make([]byte, MaxResourceBytes+1)}, "resource note://readme of MCP server docs is 1048577 bytes"},
		} {
			_, err := db.AppendMessage(ctx, Message{SessionID: s.ID, Role: RoleUser, Parts: []Part{c.part}})
			if !errors.Is(err, ErrBadResource) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("stored %q: %v, want %q", c.part.Args, err, c.want)
			}
		}
	})
}

// The open turn of a session is set and cleared with the turn's writes; a later turn's
// record is not cleared by an earlier turn's end.
func TestOpenTurns(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		w := mustWorkspace(t, db, "/o")
		a, b := mustSession(t, db, w.ID), mustSession(t, db, w.ID)
		open := func(s, turn string) {
			if err := db.Batch(ctx, func(tx *Tx) error {
				return tx.OpenTurn(ctx, OpenTurn{SessionID: s, TurnID: turn, UserMessageID: "msg_" + turn})
			}); err != nil {
				t.Fatal(err)
			}
		}
		open(a.ID, "t1")
		open(b.ID, "t2")
		open(a.ID, "t3") // replaces t1, which nobody sealed
		got, err := db.OpenTurns(ctx)
		if err != nil || len(got) != 2 {
			t.Fatalf("%+v, %v", got, err)
		}
		byID := map[string]OpenTurn{got[0].SessionID: got[0], got[1].SessionID: got[1]}
		if byID[a.ID].TurnID != "t3" || byID[a.ID].UserMessageID != "msg_t3" || byID[b.ID].TurnID != "t2" || byID[a.ID].StartedAt.IsZero() {
			t.Fatalf("open turns %+v", got)
		}
		if err := db.CloseTurn(ctx, a.ID, "t1"); err != nil {
			t.Fatal(err)
		}
		if err := db.CloseTurn(ctx, b.ID, "t2"); err != nil {
			t.Fatal(err)
		}
		if got, _ := db.OpenTurns(ctx); len(got) != 1 || got[0].TurnID != "t3" {
			t.Fatalf("after closing t1 (stale) and t2: %+v", got)
		}
		if err := db.Batch(ctx, func(tx *Tx) error {
			return tx.OpenTurn(ctx, OpenTurn{SessionID: "ses_nope", TurnID: "t"})
		}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("open turn of a missing session: %v", err)
		}
		if s, ws, err := db.SessionWorkspace(ctx, a.ID); err != nil || s.ID != a.ID || ws.ID != w.ID || ws.Path != "/o" {
			t.Fatalf("SessionWorkspace = %+v %+v %v", s, ws, err)
		}
		if _, _, err := db.SessionWorkspace(ctx, "ses_nope"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("SessionWorkspace of a missing session: %v", err)
		}
	})
}

func TestAllowedPathsChangeForGood(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		w := mustWorkspace(t, db, "/ws")
		for _, c := range []struct {
			add          bool
			path         string
			changed      bool
			wantAllowed  []string
			wantErrMatch string
		}{
			{true, "/data/", true, []string{"/data"}, ""},
			{true, "/data", false, []string{"/data"}, ""},
			{true, "/ws", false, []string{"/data"}, ""},
			{true, "/more", true, []string{"/data", "/more"}, ""},
			{false, "/nothere", false, []string{"/data", "/more"}, ""},
			{false, "/data", true, []string{"/more"}, ""},
			{true, "relative", false, nil, "not an absolute path"},
		} {
			var got Workspace
			var changed bool
			var err error
			if c.add {
				got, changed, err = db.AddAllowedPath(ctx, w.ID, c.path)
			} else {
				got, changed, err = db.RemoveAllowedPath(ctx, w.ID, c.path)
			}
			if c.wantErrMatch != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErrMatch) {
					t.Fatalf("%+v: %v", c, err)
				}
				continue
			}
			if err != nil || changed != c.changed || strings.Join(got.AllowedPaths, ",") != strings.Join(c.wantAllowed, ",") {
				t.Fatalf("%+v: %+v changed=%v %v", c, got.AllowedPaths, changed, err)
			}
			stored, err := db.Workspace(ctx, w.ID)
			if err != nil || strings.Join(stored.AllowedPaths, ",") != strings.Join(c.wantAllowed, ",") {
				t.Fatalf("%+v: stored %+v %v", c, stored.AllowedPaths, err)
			}
		}
		if _, _, err := db.AddAllowedPath(ctx, "ws_nope", "/x"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("missing workspace: %v", err)
		}
	})
}

// The writer never checkpoints; the checkpointer does, soon, so the log stays small
// however many commits go through.
func TestCheckpointerKeepsTheLogSmall(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	s := mustSession(t, db, mustWorkspace(t, db, "/c").ID)
	payload := json.RawMessage(`{"text":"` + strings.Repeat("x", 3000) + `"}`)
	maxWAL := int64(0)
	for i := range 6000 {
		if _, err := db.AppendEvents(ctx, s.ID, NewEvent{Type: "big", Payload: payload}); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 {
			if st, err := os.Stat(db.Path() + "-wal"); err == nil {
				maxWAL = max(maxWAL, st.Size())
			}
		}
	}
	// 6000 commits of about six 4 KiB pages each: 140 MB of log if nothing checkpointed.
	// The log starts over once restartAfterPages are copied; under writes that never pause
	// it reaches a few times that before the checkpointer catches up, and past forceAfter
	// commits the writer waits for (or runs) the checkpoint, however starved the
	// checkpointer is (8–10 MB at load 8–15, was up to 35 MB).
	t.Logf("the log grew to %d bytes at most", maxWAL)
	if maxWAL > 20<<20 {
		t.Fatalf("the log grew to %d bytes", maxWAL)
	}
	var walPages int
	if err := db.write.QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&walPages); err != nil || walPages != 0 {
		t.Fatalf("the writer checkpoints itself every %d pages (%v)", walPages, err)
	}
}

// A part's JSON carries its duration in milliseconds beside the nanoseconds, and decodes
// back to the same part.
func TestPartJSONCarriesDurationMs(t *testing.T) {
	p := Part{ID: "prt_1", Kind: PartToolCall, Status: StatusComplete, Duration: 62*time.Millisecond + 600*time.Microsecond,
		Visualization: json.RawMessage(`{"type":"none"}`)}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"durationMs":63`) || !strings.Contains(string(b), `"duration":62600000`) || !strings.Contains(string(b), `"visualization":{"type":"none"}`) {
		t.Fatalf("%s", b)
	}
	var back Part
	if err := json.Unmarshal(b, &back); err != nil || back.Duration != p.Duration || back.ID != p.ID || string(back.Visualization) != `{"type":"none"}` {
		t.Fatalf("%+v, %v", back, err)
	}
	m, _ := json.Marshal(Message{ID: "m", Parts: []Part{p}})
	if !strings.Contains(string(m), `"durationMs":63`) {
		t.Fatalf("message %s", m)
	}
}
