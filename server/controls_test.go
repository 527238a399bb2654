package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/store"
)

// transcriptOf says a session's messages as role:content pairs, over the API.
func (f *fixture) transcriptOf(sessionID string) string {
	f.t.Helper()
	var list struct{ Messages []store.Message }
	f.call("GET", "/api/sessions/"+sessionID+"/messages", nil, 200, &list)
	var out []string
	for _, m := range list.Messages {
		out = append(out, string(m.Role)+":"+m.Content)
	}
	return strings.Join(out, " | ")
}

// The conversation controls over the API: a message queued while a turn runs goes as the
// next turn; editing the first message with restore cuts the conversation back and puts the
// file the cut turn wrote back; regenerate answers again; fork copies up to a message.
func TestConversationControlsOverAPI(t *testing.T) {
	f := newFixture(t).start()
	_, ses := f.session()
	sock := f.dial("/api/sessions/"+ses.ID+"/ws?after=0", nil)
	f.fake.Push(
		providertest.NewOpenAIStream("test-model").ToolCall(0, "call_1", "write_note", `{"path":"note.txt","text":"hello"}`).
			Pause(500*time.Millisecond).Finish("tool_calls").Done().Reply(),
		providertest.OpenAIText("test-model", "wrote"),
		providertest.OpenAIText("test-model", "second answer"),
	)
	var first struct {
		Turn struct{ ID, UserMessageID string }
	}
	f.call("POST", "/api/sessions/"+ses.ID+"/queue", map[string]any{"text": "write a note"}, 202, &first)
	if first.Turn.ID == "" {
		t.Fatalf("an idle session's message starts a turn: %+v", first)
	}
	var queued struct{ Queued struct{ ID, Text string } }
	f.call("POST", "/api/sessions/"+ses.ID+"/queue", map[string]any{"text": "and then this"}, 202, &queued)
	if queued.Queued.ID == "" || queued.Queued.Text != "and then this" {
		t.Fatalf("queued = %+v", queued)
	}
	var list struct{ Items []struct{ ID string } }
	f.call("GET", "/api/sessions/"+ses.ID+"/queue", nil, 200, &list)
	if len(list.Items) != 1 {
		t.Fatalf("queue %+v", list)
	}
	sock.until("queue.changed", 30*time.Second)
	sock.until("turn.finished", 60*time.Second)
	sock.until("turn.finished", 60*time.Second)
	want := "user:write a note | assistant: | assistant:wrote | user:and then this | assistant:second answer"
	if got := f.transcriptOf(ses.ID); got != want {
		t.Fatalf("after the queue\n got %s\nwant %s", got, want)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "note.txt")); err != nil {
		t.Fatal(err)
	}

	// Edit the first message and resend it, restoring the files: note.txt goes.
	f.fake.Push(providertest.OpenAIText("test-model", "nothing written"))
	var res struct {
		Turn struct{ ID string }
		Cut  struct{ Count int }
	}
	f.call("POST", "/api/sessions/"+ses.ID+"/messages/"+first.Turn.UserMessageID+"/resend",
		map[string]any{"text": "do not write", "restore": true}, 202, &res)
	sock.until("messages.cut", 30*time.Second)
	sock.until("turn.finished", 60*time.Second)
	if got := f.transcriptOf(ses.ID); got != "user:do not write | assistant:nothing written" {
		t.Fatalf("after the edit: %s", got)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "note.txt")); !os.IsNotExist(err) {
		t.Fatalf("note.txt after Restore to here: %v", err)
	}

	f.fake.Push(providertest.OpenAIText("test-model", "said again"))
	f.call("POST", "/api/sessions/"+ses.ID+"/regenerate", map[string]any{}, 202, nil)
	sock.until("turn.finished", 60*time.Second)
	if got := f.transcriptOf(ses.ID); got != "user:do not write | assistant:said again" {
		t.Fatalf("after regenerate: %s", got)
	}

	var msgs struct{ Messages []store.Message }
	f.call("GET", "/api/sessions/"+ses.ID+"/messages", nil, 200, &msgs)
	var fork sessionView
	f.call("POST", "/api/sessions/"+ses.ID+"/fork", map[string]any{"messageId": msgs.Messages[0].ID}, 201, &fork)
	if fork.ID == ses.ID || fork.Title != "test (fork)" {
		t.Fatalf("fork %+v", fork)
	}
	if got := f.transcriptOf(fork.ID); got != "user:do not write" {
		t.Fatalf("the fork holds %s", got)
	}
	// Errors say what was wrong.
	f.call("POST", "/api/sessions/"+ses.ID+"/messages/"+msgs.Messages[1].ID+"/resend", map[string]any{"text": "x"}, 400, nil)
	f.call("POST", "/api/sessions/"+ses.ID+"/fork", map[string]any{"messageId": "msg_nope"}, 404, nil)
	f.call("DELETE", "/api/sessions/"+ses.ID+"/queue/q_nope", nil, 404, nil)
}
