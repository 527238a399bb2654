package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestWorkspaceCRUD(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()

		w, err := db.CreateWorkspace(ctx, Workspace{Name: "proj", Path: "/home/u/proj/", AllowedPaths: []string{"/data/shared/"}})
		if err != nil {
			t.Fatal(err)
		}
		if w.ID == "" || w.Path != "/home/u/proj" || !reflect.DeepEqual(w.AllowedPaths, []string{"/data/shared"}) || w.CreatedAt.IsZero() {
			t.Fatalf("created %+v", w)
		}
		got, err := db.Workspace(ctx, w.ID)
		if err != nil || !reflect.DeepEqual(got, w) {
			t.Fatalf("Workspace = %+v, %v; want %+v", got, err, w)
		}
		if byPath, err := db.WorkspaceByPath(ctx, "/home/u/proj/"); err != nil || byPath.ID != w.ID {
			t.Fatalf("WorkspaceByPath = %+v, %v", byPath, err)
		}
		if _, err := db.CreateWorkspace(ctx, Workspace{Path: "/home/u/proj"}); !errors.Is(err, ErrConflict) {
			t.Fatalf("second workspace on one folder: %v, want ErrConflict", err)
		}
		for _, bad := range []Workspace{{Path: "relative"}, {Path: ""}, {Path: "/ok", AllowedPaths: []string{"rel"}}} {
			if _, err := db.CreateWorkspace(ctx, bad); err == nil {
				t.Errorf("CreateWorkspace(%+v) accepted a relative path", bad)
			}
		}

		time.Sleep(2 * time.Millisecond)
		other := mustWorkspace(t, db, "/other")
		list, err := db.ListWorkspaces(ctx)
		if err != nil || len(list) != 2 || list[0].ID != other.ID {
			t.Fatalf("ListWorkspaces = %+v, %v; want the newer first", list, err)
		}

		time.Sleep(2 * time.Millisecond)
		w.Name, w.AllowedPaths = "renamed", []string{"/a", "/b"}
		upd, err := db.UpdateWorkspace(ctx, w)
		if err != nil || upd.Name != "renamed" || !reflect.DeepEqual(upd.AllowedPaths, []string{"/a", "/b"}) || !upd.UpdatedAt.After(w.UpdatedAt) {
			t.Fatalf("UpdateWorkspace = %+v, %v", upd, err)
		}
		if _, err := db.UpdateWorkspace(ctx, Workspace{ID: "ws_missing", Path: "/x"}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("update of a missing workspace: %v", err)
		}
		upd.Path = "/other"
		if _, err := db.UpdateWorkspace(ctx, upd); !errors.Is(err, ErrConflict) {
			t.Fatalf("moving a workspace onto another's folder: %v", err)
		}

		// Deleting a workspace takes its sessions and their contents with it.
		s := mustSession(t, db, w.ID)
		m, err := db.AppendMessage(ctx, Message{SessionID: s.ID, Role: RoleUser, Content: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.AppendEvents(ctx, s.ID, NewEvent{Type: "x"}); err != nil {
			t.Fatal(err)
		}
		if err := db.DeleteWorkspace(ctx, w.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Workspace(ctx, w.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("deleted workspace still found: %v", err)
		}
		if _, err := db.Session(ctx, s.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("session outlived its workspace: %v", err)
		}
		if _, err := db.Message(ctx, m.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("message outlived its workspace: %v", err)
		}
		if evs, _ := db.EventsAfter(ctx, s.ID, 0, 0); len(evs) != 0 {
			t.Fatalf("events outlived their workspace: %+v", evs)
		}
		if err := db.DeleteWorkspace(ctx, w.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second delete: %v", err)
		}
	})
}

func TestSessionCRUD(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		w := mustWorkspace(t, db, "/proj")

		if _, err := db.CreateSession(ctx, Session{WorkspaceID: "ws_nope"}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("session in a missing workspace: %v", err)
		}
		a := mustSession(t, db, w.ID)
		got, err := db.Session(ctx, a.ID)
		if err != nil || !reflect.DeepEqual(got, a) {
			t.Fatalf("Session = %+v, %v; want %+v", got, err, a)
		}
		if _, err := db.CreateSession(ctx, Session{ID: a.ID, WorkspaceID: w.ID}); !errors.Is(err, ErrConflict) {
			t.Fatalf("duplicate session id: %v", err)
		}
		time.Sleep(2 * time.Millisecond)
		b := mustSession(t, db, w.ID)

		list, err := db.ListSessions(ctx, w.ID)
		if err != nil || len(list) != 2 || list[0].ID != b.ID {
			t.Fatalf("ListSessions = %+v, %v", list, err)
		}
		// A new message moves its session to the top.
		time.Sleep(2 * time.Millisecond)
		if _, err := db.AppendMessage(ctx, Message{SessionID: a.ID, Role: RoleUser, Content: "bump"}); err != nil {
			t.Fatal(err)
		}
		if list, _ = db.ListSessions(ctx, w.ID); list[0].ID != a.ID {
			t.Fatalf("a session with a new message is not listed first: %+v", list)
		}

		a.Title, a.Provider, a.Model = "renamed", "anthropic", "claude-x"
		upd, err := db.UpdateSession(ctx, a)
		if err != nil || upd.Title != "renamed" || upd.Provider != "anthropic" || upd.Model != "claude-x" || upd.WorkspaceID != w.ID {
			t.Fatalf("UpdateSession = %+v, %v", upd, err)
		}
		if _, err := db.UpdateSession(ctx, Session{ID: "ses_nope"}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("update of a missing session: %v", err)
		}
		if err := db.DeleteSession(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		if list, _ = db.ListSessions(ctx, w.ID); len(list) != 1 || list[0].ID != b.ID {
			t.Fatalf("after delete: %+v", list)
		}
		if err := db.DeleteSession(ctx, a.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second delete: %v", err)
		}
		if list, err := db.ListSessions(ctx, "ws_nope"); err != nil || len(list) != 0 {
			t.Fatalf("sessions of a missing workspace: %+v, %v", list, err)
		}
	})
}

func TestMessagesAndPartsStreamInOrder(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		s := mustSession(t, db, mustWorkspace(t, db, "/proj").ID)

		user, err := db.AppendMessage(ctx, Message{SessionID: s.ID, Role: RoleUser, Content: "read a.txt",
			Parts: []Part{{Kind: PartText, Text: "read a.txt"}}})
		if err != nil {
			t.Fatal(err)
		}
		if user.Seq != 1 || user.Status != StatusComplete || len(user.Parts) != 1 || user.Parts[0].Seq != 1 || user.Parts[0].MessageID != user.ID {
			t.Fatalf("user message %+v", user)
		}
		asst, err := db.AppendMessage(ctx, Message{SessionID: s.ID, Role: RoleAssistant, Status: StatusStreaming, Provider: "openai", Model: "m"})
		if err != nil || asst.Seq != 2 {
			t.Fatalf("assistant message %+v, %v", asst, err)
		}
		text, err := db.AppendPart(ctx, Part{MessageID: asst.ID, Kind: PartText, Status: StatusStreaming})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{"Let me ", "read ", "it. ✓"} {
			if err := db.AppendPartText(ctx, text.ID, d); err != nil {
				t.Fatal(err)
			}
		}
		call, err := db.AppendPart(ctx, Part{MessageID: asst.ID, Kind: PartToolCall, ToolName: "read_file", CallID: "call_1",
			Args: `{"path": "a.txt"`, Status: StatusPending})
		if err != nil {
			t.Fatal(err)
		}
		call.Args += "}"
		call.Status, call.Result, call.Duration = StatusComplete, `{"success":true,"result":"hello"}`, 1500*time.Millisecond
		call.Visualization = json.RawMessage(`{"type":"code","path":"a.txt","content":"hello"}`)
		if err := db.UpdatePart(ctx, call); err != nil {
			t.Fatal(err)
		}
		text.Status = StatusComplete
		text.Text = "Let me read it. ✓"
		if err := db.UpdatePart(ctx, text); err != nil {
			t.Fatal(err)
		}
		asst.Status, asst.Finish, asst.TokensIn, asst.TokensOut, asst.Content = StatusComplete, "tool_calls", 120, 34, "Let me read it. ✓"
		if err := db.UpdateMessage(ctx, asst); err != nil {
			t.Fatal(err)
		}
		if _, err := db.AppendMessage(ctx, Message{SessionID: s.ID, Role: RoleAssistant, Content: "It says hello."}); err != nil {
			t.Fatal(err)
		}

		msgs, err := db.ListMessages(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 3 || msgs[0].ID != user.ID || msgs[1].ID != asst.ID || msgs[2].Seq != 3 {
			t.Fatalf("messages out of order: %+v", msgs)
		}
		m := msgs[1]
		if m.Status != StatusComplete || m.Finish != "tool_calls" || m.TokensIn != 120 || m.TokensOut != 34 || m.Provider != "openai" {
			t.Fatalf("assistant message not updated: %+v", m)
		}
		if len(m.Parts) != 2 || m.Parts[0].Text != "Let me read it. ✓" || m.Parts[0].Seq != 1 || m.Parts[1].Seq != 2 {
			t.Fatalf("parts: %+v", m.Parts)
		}
		p := m.Parts[1]
		if p.Args != `{"path": "a.txt"}` || p.Result != `{"success":true,"result":"hello"}` || p.Duration != 1500*time.Millisecond ||
			string(p.Visualization) != `{"type":"code","path":"a.txt","content":"hello"}` || p.Status != StatusComplete || p.CallID != "call_1" {
			t.Fatalf("tool part: %+v", p)
		}
		one, err := db.Message(ctx, asst.ID)
		if err != nil || !reflect.DeepEqual(one, m) {
			t.Fatalf("Message = %+v, %v; want %+v", one, err, m)
		}
		if after, err := db.ListMessagesAfter(ctx, s.ID, 1, 1); err != nil || len(after) != 1 || after[0].ID != asst.ID || len(after[0].Parts) != 2 {
			t.Fatalf("ListMessagesAfter(1, limit 1) = %+v, %v", after, err)
		}
		if got, err := db.Part(ctx, call.ID); err != nil || got.Args != p.Args {
			t.Fatalf("Part = %+v, %v", got, err)
		}

		// Refusals say what was wrong.
		if _, err := db.AppendMessage(ctx, Message{SessionID: s.ID, Role: "tool"}); err == nil {
			t.Error("a message with role tool was stored")
		}
		if _, err := db.AppendMessage(ctx, Message{SessionID: "ses_nope", Role: RoleUser}); !errors.Is(err, ErrNotFound) {
			t.Errorf("message in a missing session: %v", err)
		}
		if _, err := db.AppendPart(ctx, Part{MessageID: asst.ID, Kind: PartToolCall, Visualization: json.RawMessage(`{oops`)}); err == nil {
			t.Error("a visualization that is not JSON was stored")
		}
		if _, err := db.AppendPart(ctx, Part{MessageID: "msg_nope", Kind: PartText}); !errors.Is(err, ErrNotFound) {
			t.Errorf("part of a missing message: %v", err)
		}
		if err := db.AppendPartText(ctx, "prt_nope", "x"); !errors.Is(err, ErrNotFound) {
			t.Errorf("text appended to a missing part: %v", err)
		}
		if err := db.UpdateMessage(ctx, Message{ID: "msg_nope", Role: RoleUser}); !errors.Is(err, ErrNotFound) {
			t.Errorf("update of a missing message: %v", err)
		}

		// Cutting the conversation back removes the later messages and their parts.
		n, err := db.DeleteMessagesFrom(ctx, s.ID, 2)
		if err != nil || n != 2 {
			t.Fatalf("DeleteMessagesFrom = %d, %v", n, err)
		}
		if _, err := db.Part(ctx, call.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("part outlived its message: %v", err)
		}
		if next, err := db.AppendMessage(ctx, Message{SessionID: s.ID, Role: RoleUser}); err != nil || next.Seq != 2 {
			t.Fatalf("message after the cut: %+v, %v", next, err)
		}
	})
}

// TestConcurrentWriters has many goroutines append to the same sessions while others read:
// every message gets a distinct sequence number, none is lost, and readers never see a
// message without the parts that were stored with it.
func TestConcurrentWriters(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		w := mustWorkspace(t, db, "/proj")
		sessions := []Session{mustSession(t, db, w.ID), mustSession(t, db, w.ID)}
		const writers, perWriter = 6, 10

		var wg sync.WaitGroup
		errs := make(chan error, writers*perWriter+64)
		done := make(chan struct{})
		for i := range writers {
			wg.Go(func() {
				s := sessions[i%len(sessions)]
				for j := range perWriter {
					m, err := db.AppendMessage(ctx, Message{SessionID: s.ID, Role: RoleUser, Content: fmt.Sprintf("w%d-%d", i, j),
						Parts: []Part{{Kind: PartText, Text: "a"}, {Kind: PartText, Text: "b"}}})
					if err != nil {
						errs <- err
						return
					}
					if _, err := db.AppendPart(ctx, Part{MessageID: m.ID, Kind: PartText, Text: "c"}); err != nil {
						errs <- err
						return
					}
					if _, err := db.AppendEvents(ctx, s.ID, NewEvent{Type: "message", Payload: json.RawMessage(`{}`)}); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		var readers sync.WaitGroup
		for range 2 {
			readers.Go(func() {
				for {
					select {
					case <-done:
						return
					default:
					}
					msgs, err := db.ListMessages(ctx, sessions[0].ID)
					if err != nil {
						errs <- err
						return
					}
					for _, m := range msgs {
						if len(m.Parts) < 2 {
							errs <- fmt.Errorf("message %s listed with %d parts; it was stored with 2", m.ID, len(m.Parts))
							return
						}
					}
					time.Sleep(5 * time.Millisecond)
				}
			})
		}
		wg.Wait()
		close(done)
		readers.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for _, s := range sessions {
			msgs, err := db.ListMessages(ctx, s.ID)
			if err != nil {
				t.Fatal(err)
			}
			want := writers / len(sessions) * perWriter
			if len(msgs) != want {
				t.Fatalf("session %s has %d messages, want %d", s.ID, len(msgs), want)
			}
			for i, m := range msgs {
				if m.Seq != int64(i+1) || len(m.Parts) != 3 || m.Parts[2].Seq != 3 {
					t.Fatalf("message %d: seq %d with %d parts", i, m.Seq, len(m.Parts))
				}
			}
			evs, err := db.EventsAfter(ctx, s.ID, 0, 0)
			if err != nil || len(evs) != want || evs[len(evs)-1].Seq != int64(want) {
				t.Fatalf("session %s: %d events (%v), want %d numbered 1…%d", s.ID, len(evs), err, want, want)
			}
		}
	})
}

func TestEventLog(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		s := mustSession(t, db, mustWorkspace(t, db, "/proj").ID)

		evs, err := db.AppendEvents(ctx, s.ID,
			NewEvent{Type: "turn.start", Payload: json.RawMessage(`{"turn":1}`)},
			NewEvent{Type: "text", Payload: json.RawMessage(`"hi"`)},
			NewEvent{Type: "turn.end"})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 3 || evs[0].Seq != 1 || evs[2].Seq != 3 || string(evs[2].Payload) != "null" {
			t.Fatalf("appended %+v", evs)
		}
		if _, err := db.AppendEvents(ctx, "", NewEvent{Type: "tools.changed"}); err != nil {
			t.Fatal(err)
		}
		if got, _ := db.EventsAfter(ctx, "", 0, 0); len(got) != 1 || got[0].Seq != 1 {
			t.Fatalf("server log: %+v", got)
		}
		got, err := db.EventsAfter(ctx, s.ID, 1, 0)
		if err != nil || len(got) != 2 || got[0].Type != "text" || string(got[0].Payload) != `"hi"` {
			t.Fatalf("EventsAfter(1) = %+v, %v", got, err)
		}
		if got, _ := db.EventsAfter(ctx, s.ID, 0, 2); len(got) != 2 || got[1].Seq != 2 {
			t.Fatalf("EventsAfter(0, limit 2) = %+v", got)
		}
		if _, err := db.AppendEvents(ctx, s.ID, NewEvent{Type: "bad", Payload: json.RawMessage(`{nope`)}); err == nil {
			t.Fatal("a payload that is not JSON was stored")
		}
		if _, err := db.AppendEvents(ctx, s.ID, NewEvent{}); err == nil {
			t.Fatal("an event without a type was stored")
		}

		// Pruning everything never makes a number come back.
		if n, err := db.PruneEvents(ctx, s.ID, 3); err != nil || n != 3 {
			t.Fatalf("PruneEvents = %d, %v", n, err)
		}
		evs, err = db.AppendEvents(ctx, s.ID, NewEvent{Type: "after"})
		if err != nil || evs[0].Seq != 4 {
			t.Fatalf("after pruning: %+v, %v; want seq 4", evs, err)
		}
		if last, err := db.LastEventSeq(ctx, s.ID); err != nil || last != 4 {
			t.Fatalf("LastEventSeq = %d, %v", last, err)
		}
		if last, err := db.LastEventSeq(ctx, "ses_none"); err != nil || last != 0 {
			t.Fatalf("LastEventSeq of an empty log = %d, %v", last, err)
		}
		if err := db.DeleteSession(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		if last, _ := db.LastEventSeq(ctx, s.ID); last != 0 {
			t.Fatalf("a deleted session kept its event counter: %d", last)
		}
	})
}

func TestAuthTokens(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		tok, secret, err := db.CreateAuthToken(ctx, "first start")
		if err != nil {
			t.Fatal(err)
		}
		if len(secret) < len(TokenPrefix)+43 || secret[:len(TokenPrefix)] != TokenPrefix {
			t.Fatalf("secret %q", secret)
		}
		got, err := db.VerifyAuthToken(ctx, secret)
		if err != nil || got.ID != tok.ID || got.Name != "first start" || got.LastUsedAt.IsZero() {
			t.Fatalf("VerifyAuthToken = %+v, %v", got, err)
		}
		for _, bad := range []string{"", secret + "x", secret[:len(secret)-1], "Bearer " + secret, TokenPrefix} {
			if _, err := db.VerifyAuthToken(ctx, bad); !errors.Is(err, ErrBadToken) {
				t.Errorf("VerifyAuthToken(%q) = %v, want ErrBadToken", bad, err)
			}
		}
		list, err := db.ListAuthTokens(ctx)
		if err != nil || len(list) != 1 || list[0].ID != tok.ID {
			t.Fatalf("ListAuthTokens = %+v, %v", list, err)
		}
		// Only the hash is stored: the secret appears nowhere in the database.
		rows, err := db.read.QueryContext(ctx, `SELECT hash, name FROM auth_tokens`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var hash []byte
			var name string
			if err := rows.Scan(&hash, &name); err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(hash, []byte(secret)) || strings.Contains(name, secret) {
				t.Fatalf("the secret was found in the table (%q, %q)", hash, name)
			}
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		db = reopen(t, db)
		if _, err := db.VerifyAuthToken(ctx, secret); err != nil {
			t.Fatalf("token lost on reopen: %v", err)
		}
		if err := db.DeleteAuthToken(ctx, tok.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := db.VerifyAuthToken(ctx, secret); !errors.Is(err, ErrBadToken) {
			t.Fatalf("revoked token still accepted: %v", err)
		}
		if err := db.DeleteAuthToken(ctx, tok.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second delete: %v", err)
		}
	})
}

func TestUnfinishedMessagesFindWhatACrashLeft(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		s := mustSession(t, db, mustWorkspace(t, db, "/u").ID)
		done, err := db.AppendMessage(ctx, Message{SessionID: s.ID, Role: RoleUser, Content: "hi", Status: StatusComplete})
		if err != nil {
			t.Fatal(err)
		}
		streaming, err := db.AppendMessage(ctx, Message{SessionID: s.ID, Role: RoleAssistant, Status: StatusStreaming})
		if err != nil {
			t.Fatal(err)
		}
		// A complete message whose tool call never finished is unfinished too.
		withCall, err := db.AppendMessage(ctx, Message{SessionID: s.ID, Role: RoleAssistant, Status: StatusComplete})
		if err != nil {
			t.Fatal(err)
		}
		call, err := db.AppendPart(ctx, Part{MessageID: withCall.ID, Kind: PartToolCall, ToolName: "t", CallID: "c1", Status: StatusRunning})
		if err != nil {
			t.Fatal(err)
		}
		got, err := db.UnfinishedMessages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].ID != streaming.ID || got[1].ID != withCall.ID {
			t.Fatalf("unfinished = %+v, want the streaming message then the one with a running call (not %s)", got, done.ID)
		}
		if len(got[1].Parts) != 1 || got[1].Parts[0].ID != call.ID {
			t.Fatalf("the running part did not come with its message: %+v", got[1].Parts)
		}
		// Sealed, nothing is unfinished.
		call.Status = StatusError
		if err := db.UpdatePart(ctx, call); err != nil {
			t.Fatal(err)
		}
		streaming.Status = StatusError
		if err := db.UpdateMessage(ctx, streaming); err != nil {
			t.Fatal(err)
		}
		if got, err := db.UnfinishedMessages(ctx); err != nil || len(got) != 0 {
			t.Fatalf("after sealing: %+v, %v", got, err)
		}
	})
}
