package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/hub"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/undo"
)

// A whole turn over the API: the model calls write_note, then answers; a WebSocket client
// sees every event in order; the messages, the tool part with its visualization and the
// turn's ledger are there afterwards.
func TestTurnOverAPIWithEventsOverWebSocket(t *testing.T) {
	f := newFixture(t).start()
	_, ses := f.session()
	f.fake.Push(
		providertest.NewOpenAIStream("test-model").Text("Writing it.").
			ToolCall(0, "call_1", "write_note", "").ToolArgs(0, `{"path":"note.txt",`).ToolArgs(0, `"text":"hello"}`).
			Finish("tool_calls").Usage(10, 5).Done().Reply(),
		providertest.OpenAIText("test-model", "Done: ", "note.txt written."),
	)
	sock := f.dial("/api/sessions/"+ses.ID+"/ws?after=0", nil)
	if sock.hello.LastSeq != 0 || sock.hello.Running || len(sock.hello.PendingAsks) != 0 {
		t.Fatalf("hello = %+v", sock.hello)
	}
	var started struct {
		Turn struct{ ID, SessionID, UserMessageID string }
	}
	f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "write a note"}, 202, &started)
	if started.Turn.ID == "" || started.Turn.UserMessageID == "" || started.Turn.SessionID != ses.ID {
		t.Fatalf("turn = %+v", started)
	}
	fin, before := sock.until("turn.finished", 60*time.Second)
	var finished struct {
		Reason    string
		MessageID string
		Changed   struct{ Files, Failed int }
		Error     string
	}
	mustJSON(t, fin.Payload, &finished)
	if finished.Reason != "done" || finished.Changed.Files != 1 || finished.Changed.Failed != 0 {
		t.Fatalf("turn.finished = %s (events: %s)", fin.Payload, types(before))
	}
	seq := types(before)
	for _, want := range []string{"turn.started", "message.created", "part.updated"} {
		if !strings.Contains(seq, want) {
			t.Errorf("events %q lack %s", seq, want)
		}
	}
	// The streamed text reached the client (as deltas, or whole in a part when the
	// harness's coalescing window held it all).
	var streamed strings.Builder
	for _, ev := range before {
		streamed.Write(ev.Payload)
	}
	if !strings.Contains(streamed.String(), "Writing it.") {
		t.Errorf("the text streamed before the tool call never reached the socket (events %s)", seq)
	}
	if data, err := os.ReadFile(filepath.Join(f.ws, "note.txt")); err != nil || string(data) != "hello" {
		t.Fatalf("note.txt = %q, %v", data, err)
	}

	// The messages as stored: the user's, then the assistant's with the tool call and its
	// visualization, then the answer.
	var msgs struct{ Messages []store.Message }
	f.call("GET", "/api/sessions/"+ses.ID+"/messages", nil, 200, &msgs)
	if len(msgs.Messages) < 3 || msgs.Messages[0].Role != store.RoleUser || msgs.Messages[0].ID != started.Turn.UserMessageID {
		t.Fatalf("messages = %+v", msgs.Messages)
	}
	var toolPart *store.Part
	var text strings.Builder
	for _, m := range msgs.Messages[1:] {
		for i, p := range m.Parts {
			if p.Kind == store.PartToolCall && p.ToolName == "write_note" {
				toolPart = &m.Parts[i]
			}
			if p.Kind == store.PartText {
				text.WriteString(p.Text)
			}
		}
	}
	if toolPart == nil || toolPart.Status != store.StatusComplete || !strings.Contains(string(toolPart.Visualization), "wrote") {
		t.Fatalf("tool part = %+v", toolPart)
	}
	if !strings.Contains(text.String(), "note.txt written.") {
		t.Errorf("assistant text = %q", text.String())
	}
	// The session's lastSeq is the last event the socket saw.
	var now sessionView
	f.call("GET", "/api/sessions/"+ses.ID, nil, 200, &now)
	if now.LastSeq != fin.Seq || now.Running {
		t.Errorf("session after the turn = %+v, turn.finished seq %d", now, fin.Seq)
	}
	// Polling gives the same log.
	var polled struct{ Events []store.Event }
	f.call("GET", "/api/sessions/"+ses.ID+"/events?after=0", nil, 200, &polled)
	if int64(len(polled.Events)) != fin.Seq || polled.Events[len(polled.Events)-1].Type != "turn.finished" {
		t.Errorf("polled %d events, last %+v; want %d ending in turn.finished", len(polled.Events), polled.Events[len(polled.Events)-1], fin.Seq)
	}

	// The ledger: Changed 1 file, with the diff's two sides.
	var ledgers struct{ Turns []turnChanges }
	f.call("GET", "/api/sessions/"+ses.ID+"/ledgers", nil, 200, &ledgers)
	if len(ledgers.Turns) != 1 {
		t.Fatalf("ledgers = %+v", ledgers)
	}
	lt := ledgers.Turns[0]
	if lt.MessageID != finished.MessageID || lt.Changed.Files != 1 || len(lt.Files) != 1 {
		t.Fatalf("turn changes = %+v (turn.finished messageId %s)", lt, finished.MessageID)
	}
	fc := lt.Files[0]
	if fc.Path != filepath.Join(f.ws, "note.txt") || fc.Before == nil || fc.Before.Exists || fc.After == nil ||
		fc.After.Text == nil || *fc.After.Text != "hello" {
		b, _ := json.Marshal(fc)
		t.Fatalf("changed file = %s", b)
	}

	// Restore to here: the dry run says what would change and changes nothing; a file
	// changed outside jean2 since is a conflict unless forced.
	restorePath := "/api/sessions/" + ses.ID + "/restore"
	note := filepath.Join(f.ws, "note.txt")
	var dry struct{ Report undo.Report }
	f.call("POST", restorePath, map[string]any{"messageId": started.Turn.UserMessageID, "dryRun": true}, 200, &dry)
	if !slices.Contains(dry.Report.Removed, note) || dry.Report.Applied {
		t.Fatalf("dry run = %+v", dry.Report)
	}
	if _, err := os.Stat(note); err != nil {
		t.Fatalf("the dry run changed the disk: %v", err)
	}
	if err := os.WriteFile(note, []byte("edited by hand"), 0o644); err != nil {
		t.Fatal(err)
	}
	body := f.call("POST", restorePath, map[string]any{"messageId": started.Turn.UserMessageID}, 409, nil)
	var refused struct {
		Error struct {
			Code    string
			Details struct{ Report undo.Report }
		}
	}
	mustJSON(t, body, &refused)
	if refused.Error.Code != codeConflict || len(refused.Error.Details.Report.Conflicts) != 1 || refused.Error.Details.Report.Conflicts[0].Path != note {
		t.Fatalf("restore over a hand edit = %s", body)
	}
	var done struct{ Report undo.Report }
	f.call("POST", restorePath, map[string]any{"messageId": started.Turn.UserMessageID, "force": true}, 200, &done)
	if !done.Report.Applied {
		t.Fatalf("forced restore = %+v", done.Report)
	}
	if _, err := os.Stat(note); !os.IsNotExist(err) {
		t.Fatalf("note.txt after restoring to before the turn: %v", err)
	}
	sock.until("restore.done", 10*time.Second)
	f.call("POST", restorePath, map[string]any{"messageId": "msg_nope"}, 404, nil)

	// The model saw the tool's result, not its visualization.
	reqs := f.fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	if body := string(reqs[1].Body); !strings.Contains(body, "wrote") || strings.Contains(body, "markdown") {
		t.Errorf("second request does not carry the result without the visualization: %s", body)
	}
	// A second turn in the same session while none runs works; the model's key never
	// appears in what the API sends.
	f.fake.Push(providertest.OpenAIText("test-model", "again"))
	f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "again"}, 202, nil)
	sock.until("turn.finished", 30*time.Second)
	_, all := f.request("GET", "/api/sessions/"+ses.ID+"/events", nil, nil)
	if strings.Contains(string(all), f.fake.Key) {
		t.Error("the provider key appears in the event log")
	}
}

// A turn that cannot reach a model is refused before the user's message is stored.
func TestTurnWithoutProvider(t *testing.T) {
	f := newFixture(t)
	f.cfg.Getenv = func(string) string { return "" }
	f.tools = nil
	f.start()
	_, ses := f.session()
	body := f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "hi"}, 400, nil)
	if code := errorCode(t, body); code != codeNoProvider {
		t.Fatalf("code %s, want no_provider", code)
	}
	var msgs struct{ Messages []store.Message }
	f.call("GET", "/api/sessions/"+ses.ID+"/messages", nil, 200, &msgs)
	if len(msgs.Messages) != 0 {
		t.Fatalf("messages stored for a refused turn: %+v", msgs.Messages)
	}
}

// While a turn runs the session is busy: a second turn, a restore and a delete are
// refused; Stop (a socket frame here) ends it "stopped", and the ask it waited on is
// cancelled.
func TestBusySessionAndStop(t *testing.T) {
	f := newFixture(t).start()
	ws, ses := f.session()
	f.fake.Push(providertest.OpenAIToolCall("test-model", "call_wait", "confirm_it", `{"question":"wait?"}`))
	sock := f.dial("/api/sessions/"+ses.ID+"/ws", nil)
	var started struct {
		Turn struct{ UserMessageID string }
	}
	f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "wait"}, 202, &started)
	sock.until("ask.pending", 60*time.Second)

	var view sessionView
	f.call("GET", "/api/sessions/"+ses.ID, nil, 200, &view)
	if !view.Running {
		t.Fatal("the session does not say it runs a turn")
	}
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/api/sessions/" + ses.ID + "/turns", map[string]any{"text": "again"}},
		{"POST", "/api/sessions/" + ses.ID + "/restore", map[string]any{"messageId": started.Turn.UserMessageID}},
		{"DELETE", "/api/sessions/" + ses.ID, nil},
		{"DELETE", "/api/workspaces/" + ws.ID, nil},
	} {
		if code := errorCode(t, f.call(c.method, c.path, c.body, 409, nil)); code != codeBusy {
			t.Errorf("%s %s while a turn runs: %s", c.method, c.path, code)
		}
	}
	sock.send(map[string]any{"type": "stop", "ref": "s1"})
	got := sock.collect(30*time.Second, "ack", "ask.resolved", "turn.finished")
	if got["ack"].Ref != "s1" {
		t.Errorf("ack = %+v", got["ack"])
	}
	var res hub.AskResolvedPayload
	mustJSON(t, got["ask.resolved"].Payload, &res)
	var fin struct{ Reason string }
	mustJSON(t, got["turn.finished"].Payload, &fin)
	if res.Outcome != hub.OutcomeCancelled || fin.Reason != "stopped" {
		t.Fatalf("after stop: ask.resolved %s, turn.finished %s", got["ask.resolved"].Payload, got["turn.finished"].Payload)
	}
	var stopped struct{ Stopped bool }
	f.call("POST", "/api/sessions/"+ses.ID+"/stop", nil, 200, &stopped)
	if stopped.Stopped {
		t.Error("stop with no turn running says it stopped one")
	}
	f.call("DELETE", "/api/sessions/"+ses.ID, nil, 204, nil)
}

// An image sent with a turn is answered, bytes and media type, by the part's image route;
// a part of another session, a part that is not an image and an unknown part are 404.
func TestPartImage(t *testing.T) {
	f := newFixture(t)
	f.start()
	_, ses := f.session()
	_, other := f.session()
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{9}, 64)...)
	f.fake.Push(providertest.OpenAIText("test-model", "A picture."))
	f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{
		"text": "look", "images": []map[string]string{{"mediaType": "image/png", "data": base64.StdEncoding.EncodeToString(png)}},
	}, 202, nil)
	var msgs struct{ Messages []store.Message }
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.call("GET", "/api/sessions/"+ses.ID+"/messages", nil, 200, &msgs)
		if len(msgs.Messages) == 2 && msgs.Messages[1].Status == store.StatusComplete {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the turn did not finish: %+v", msgs.Messages)
		}
		time.Sleep(20 * time.Millisecond)
	}
	user, answer := msgs.Messages[0], msgs.Messages[1]
	if len(user.Parts) != 1 || user.Parts[0].Kind != store.PartImage || len(answer.Parts) == 0 {
		t.Fatalf("messages %+v", msgs.Messages)
	}
	image := "/api/sessions/" + ses.ID + "/parts/" + user.Parts[0].ID + "/image"
	req, err := http.NewRequest("GET", f.ts.URL+image, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = f.authHeader()
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" || !bytes.Equal(got, png) {
		t.Fatalf("image: status %d, type %q, %d bytes (want 200, image/png, the %d sent)", resp.StatusCode, resp.Header.Get("Content-Type"), len(got), len(png))
	}
	for _, path := range []string{
		"/api/sessions/" + other.ID + "/parts/" + user.Parts[0].ID + "/image",
		"/api/sessions/" + ses.ID + "/parts/" + answer.Parts[0].ID + "/image",
		"/api/sessions/" + ses.ID + "/parts/part_nope/image",
	} {
		if code := errorCode(t, f.call("GET", path, nil, 404, nil)); code != "not_found" {
			t.Errorf("%s: code %s, want not_found", path, code)
		}
	}
}
