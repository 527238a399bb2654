package server

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/jean2/jean2/store"
)

func TestWorkspaceAndSessionCRUD(t *testing.T) {
	f := newFixture(t)
	f.tools = nil
	f.start()

	var health map[string]string
	f.call("GET", "/api/health", nil, 200, &health)
	if health["status"] != "ok" || len(health) != 1 {
		t.Fatalf("health = %v", health)
	}

	// Workspaces: the folder must be absolute and exist; one workspace per folder.
	file := filepath.Join(f.root, "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []map[string]any{
		{}, {"path": "relative/dir"}, {"path": filepath.Join(f.root, "missing")}, {"path": file},
		{"path": f.ws, "allowedPaths": []string{"rel"}}, {"path": f.ws, "color": "blue"},
	} {
		_, body := f.request("POST", "/api/workspaces", bad, nil)
		if code := errorCode(t, body); code != codeBadRequest {
			t.Errorf("POST /api/workspaces %v: code %s, want bad_request", bad, code)
		}
	}
	if status, body := f.request("POST", "/api/workspaces", "{not json", nil); status != 400 || !strings.Contains(string(body), "not valid JSON") {
		t.Errorf("malformed JSON: %d %s", status, body)
	}
	other := t.TempDir()
	var ws store.Workspace
	f.call("POST", "/api/workspaces", map[string]any{"path": f.ws + "/", "allowedPaths": []string{other}}, 201, &ws)
	if ws.Path != f.ws || ws.Name != "ws" || len(ws.AllowedPaths) != 1 || ws.AllowedPaths[0] != other {
		t.Fatalf("created workspace = %+v", ws)
	}
	if code := errorCode(t, f.call("POST", "/api/workspaces", map[string]any{"path": f.ws}, 409, nil)); code != codeConflict {
		t.Errorf("second workspace on a folder: %s", code)
	}
	var got store.Workspace
	f.call("GET", "/api/workspaces/"+ws.ID, nil, 200, &got)
	if got.ID != ws.ID {
		t.Fatalf("GET workspace = %+v", got)
	}
	f.call("PATCH", "/api/workspaces/"+ws.ID, map[string]any{"name": "project", "allowedPaths": []string{}}, 200, &got)
	if got.Name != "project" || len(got.AllowedPaths) != 0 || got.Path != f.ws {
		t.Fatalf("patched workspace = %+v", got)
	}
	var list struct{ Workspaces []store.Workspace }
	f.call("GET", "/api/workspaces", nil, 200, &list)
	if len(list.Workspaces) != 1 || list.Workspaces[0].Name != "project" {
		t.Fatalf("workspaces = %+v", list)
	}
	if code := errorCode(t, f.call("GET", "/api/workspaces/ws_nope", nil, 404, nil)); code != codeNotFound {
		t.Errorf("unknown workspace: %s", code)
	}

	// Sessions.
	if code := errorCode(t, f.call("POST", "/api/workspaces/"+ws.ID+"/sessions", map[string]any{"provider": "nope"}, 400, nil)); code != codeBadRequest {
		t.Errorf("unknown provider: %s", code)
	}
	var ses sessionView
	f.call("POST", "/api/workspaces/"+ws.ID+"/sessions", map[string]any{"title": "first", "provider": "openai"}, 201, &ses)
	if ses.Title != "first" || ses.Provider != "openai" || ses.WorkspaceID != ws.ID || ses.Running || ses.LastSeq != 0 {
		t.Fatalf("created session = %+v", ses)
	}
	sock := f.dial("/api/sessions/"+ses.ID+"/ws", nil)
	var renamed sessionView
	f.call("PATCH", "/api/sessions/"+ses.ID, map[string]any{"title": "renamed", "model": "m2"}, 200, &renamed)
	if renamed.Title != "renamed" || renamed.Model != "m2" || renamed.Provider != "openai" || renamed.LastSeq != 1 {
		t.Fatalf("renamed session = %+v", renamed)
	}
	ev, _ := sock.until("session.updated", 5*time.Second)
	var upd struct{ Session store.Session }
	mustJSON(t, ev.Payload, &upd)
	if ev.Seq != 1 || upd.Session.Title != "renamed" {
		t.Fatalf("session.updated = %+v", ev)
	}
	var sessions struct{ Sessions []sessionView }
	f.call("GET", "/api/workspaces/"+ws.ID+"/sessions", nil, 200, &sessions)
	if len(sessions.Sessions) != 1 || sessions.Sessions[0].Title != "renamed" {
		t.Fatalf("sessions = %+v", sessions)
	}
	f.call("GET", "/api/sessions", nil, 200, &sessions)
	if len(sessions.Sessions) != 1 {
		t.Fatalf("all sessions = %+v", sessions)
	}
	var msgs struct{ Messages []store.Message }
	f.call("GET", "/api/sessions/"+ses.ID+"/messages", nil, 200, &msgs)
	if msgs.Messages == nil || len(msgs.Messages) != 0 {
		t.Fatalf("messages of a new session = %+v", msgs)
	}
	if code := errorCode(t, f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "  "}, 400, nil)); code != codeBadRequest {
		t.Errorf("empty turn: %s", code)
	}
	f.call("DELETE", "/api/sessions/"+ses.ID, nil, 204, nil)
	f.call("GET", "/api/sessions/"+ses.ID, nil, 404, nil)
	f.call("DELETE", "/api/sessions/"+ses.ID, nil, 404, nil)

	// Deleting a workspace deletes its sessions.
	var second sessionView
	f.call("POST", "/api/workspaces/"+ws.ID+"/sessions", map[string]any{}, 201, &second)
	f.call("DELETE", "/api/workspaces/"+ws.ID, nil, 204, nil)
	f.call("GET", "/api/sessions/"+second.ID, nil, 404, nil)

	// Unknown routes and methods answer in JSON.
	if code := errorCode(t, f.call("GET", "/api/nothing", nil, 404, nil)); code != codeNotFound {
		t.Errorf("unknown route: %s", code)
	}
	if code := errorCode(t, f.call("PUT", "/api/workspaces", map[string]any{}, http.StatusMethodNotAllowed, nil)); code != codeMethod {
		t.Errorf("wrong method: %s", code)
	}
	// Without a web client, / says so.
	if status, body := f.request("GET", "/", nil, nil); status != 200 || !strings.Contains(string(body), "no web client") {
		t.Errorf("GET / = %d %s", status, body)
	}
}

// Close ends the sockets with "going away", so clients know to reconnect later.
func TestCloseEndsSocketsGoingAway(t *testing.T) {
	f := newFixture(t)
	f.tools = nil
	f.start()
	_, ses := f.session()
	sock := f.dial("/api/sessions/"+ses.ID+"/ws", nil)
	server := f.dial("/api/ws", nil)
	f.stop()
	for _, s := range []*socket{sock, server} {
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			t.Fatal("a socket stayed open after Close")
		}
		if got := websocket.CloseStatus(s.closeBy); got != websocket.StatusGoingAway {
			t.Errorf("close status %v (%v), want going away", got, s.closeBy)
		}
	}
}
