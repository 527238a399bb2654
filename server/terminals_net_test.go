package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// reachable is a plain HTTP service on the host's loopback (what the proxy refuses unless
// allowed), answering body, with the requests it got counted.
func reachable(t *testing.T, body string) (string, *atomic.Int32) {
	t.Helper()
	hits := new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintln(w, body)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), hits
}

// waitText waits for a text frame the page got from index from on that match selects,
// and returns its index.
func (s *termSocket) waitText(from int, what string, match func(map[string]any) bool) int {
	s.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		s.mu.Lock()
		for i := from; i < len(s.text); i++ {
			if match(s.text[i]) {
				s.mu.Unlock()
				return i
			}
		}
		s.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.t.Fatalf("the page never got %s; it got %v and the terminal printed:\n%q", what, s.text, s.out.String())
	return 0
}

// texts is how many text frames the page got so far.
func (s *termSocket) texts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.text)
}

// question waits for the question about target and returns its id and index.
func (s *termSocket) question(from int, target string) (string, int) {
	s.t.Helper()
	i := s.waitText(from, "a question about "+target, func(m map[string]any) bool {
		return m["type"] == "network" && m["target"] == target
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	id, _ := s.text[i]["id"].(string)
	return id, i
}

func (s *termSocket) sendText(v any) {
	s.t.Helper()
	data, _ := json.Marshal(v)
	if err := s.c.Write(context.Background(), websocket.MessageText, data); err != nil {
		s.t.Fatal(err)
	}
}

// A connection a terminal's command makes is held at its proxy while the pages attached
// to the terminal are asked: Allow lets it through and the target is not asked about again
// for the terminal's life; a page that attaches later is asked too, and every page hears
// of the answer.
func TestTerminalAsksThePageAboutTheNetwork(t *testing.T) {
	f, ws := terminalFixture(t, TerminalOptions{})
	target, hits := reachable(t, "reached-the-loopback-service")
	var term liveTerminal
	f.call("POST", "/api/workspaces/"+ws.ID+"/terminals", nil, 201, &term)
	page := f.attachTerminal(t, term.ID)
	page.typeLine(`curl -sS -m 100 http://` + target + `/; echo curl-$((40+2))`)
	id, _ := page.question(0, target)

	// A second page, opened while the question waits, is asked too; its answer counts.
	other := f.attachTerminal(t, term.ID)
	if again, _ := other.question(0, target); again != id {
		t.Fatalf("the later page was asked %q, the first %q", again, id)
	}
	other.sendText(map[string]any{"type": "network", "id": id, "allow": true})
	for _, p := range []*termSocket{page, other} {
		p.waitText(0, "the answer to "+id, func(m map[string]any) bool {
			return m["type"] == "network-answered" && m["id"] == id && m["allow"] == true
		})
	}
	page.waitFor(`reached-the-loopback-service\s+curl-42`)

	// The same target again: through, nobody asked.
	before := page.texts()
	page.typeLine(`curl -sS -m 100 http://` + target + `/again; echo curl-$((50+2))`)
	page.waitFor(`reached-the-loopback-service\s+curl-52`)
	if n := hits.Load(); n != 2 {
		t.Fatalf("the service got %d requests, want 2", n)
	}
	page.mu.Lock()
	defer page.mu.Unlock()
	for _, m := range page.text[before:] {
		if m["type"] == "network" {
			t.Fatalf("asked again about an allowed target: %v", m)
		}
	}
}

// Deny refuses the connection with advice on how a terminal allows one, and the target is
// refused from then on without a question; a question nobody answers times out as a
// refusal; frames the page gets wrong are answered with an error, the terminal going on.
func TestTerminalNetworkDenyAndTimeout(t *testing.T) {
	f, ws := terminalFixture(t, TerminalOptions{AskTimeout: 3 * time.Second})
	denied, deniedHits := reachable(t, "reached-the-denied-service")
	ignored, ignoredHits := reachable(t, "reached-the-ignored-service")
	var term liveTerminal
	f.call("POST", "/api/workspaces/"+ws.ID+"/terminals", nil, 201, &term)
	page := f.attachTerminal(t, term.ID)

	page.typeLine(`curl -sS -m 100 http://` + denied + `/; echo curl-$((40+2))`)
	id, at := page.question(0, denied)
	// Wrong frames: an unknown id, allow that is not a boolean, no allow, an unknown type.
	for _, bad := range []any{
		map[string]any{"type": "network", "id": "q999", "allow": true},
		map[string]any{"type": "network", "id": id, "allow": "yes"},
		map[string]any{"type": "network", "id": id},
		map[string]any{"type": "telepathy"},
	} {
		n := page.texts()
		page.sendText(bad)
		page.waitText(n, fmt.Sprintf("an error for %v", bad), func(m map[string]any) bool { return m["type"] == "error" })
	}
	page.sendText(map[string]any{"type": "network", "id": id, "allow": false})
	page.waitText(at, "the denial settled", func(m map[string]any) bool {
		return m["type"] == "network-answered" && m["id"] == id && m["allow"] == false
	})
	page.waitFor(`refused: the person at the terminal did not allow it; a page of the terminal asks, in a bar above it[^\n]*\s+curl-42`)

	before := page.texts()
	page.typeLine(`curl -sS -m 100 http://` + denied + `/; echo curl-$((50+2))`)
	page.waitFor(`did not allow it[^\n]*\s+curl-52`)
	page.mu.Lock()
	for _, m := range page.text[before:] {
		if m["type"] == "network" {
			t.Errorf("asked again about a denied target: %v", m)
		}
	}
	page.mu.Unlock()

	// Nobody answers: refused once the question times out, and the page told to hide it.
	page.typeLine(`curl -sS -m 100 http://` + ignored + `/; echo curl-$((60+2))`)
	id, at = page.question(before, ignored)
	page.waitText(at, "the timeout settled", func(m map[string]any) bool {
		return m["type"] == "network-answered" && m["id"] == id && m["allow"] == false
	})
	page.waitFor(`did not allow it[^\n]*\s+curl-62`)
	if d, i := deniedHits.Load(), ignoredHits.Load(); d != 0 || i != 0 {
		t.Fatalf("refused services were reached: %d and %d requests", d, i)
	}
}

// With no page attached nobody can answer: a command's connection is refused at once.
func TestTerminalNetworkWithNoPage(t *testing.T) {
	f, ws := terminalFixture(t, TerminalOptions{})
	target, hits := reachable(t, "reached-the-loopback-service")
	var term liveTerminal
	f.call("POST", "/api/workspaces/"+ws.ID+"/terminals", nil, 201, &term)
	page := f.attachTerminal(t, term.ID)
	page.typeLine(`sleep 2; curl -sS -m 100 http://` + target + `/; echo curl-$((40+2))`)
	page.waitFor(`sleep 2; curl`) // the shell has the line
	page.c.Close(websocket.StatusNormalClosure, "gone")
	<-page.done
	time.Sleep(4 * time.Second)
	again := f.attachTerminal(t, term.ID)
	again.waitFor(`did not allow it[^\n]*\s+curl-42`)
	if n := again.texts(); n != 0 || hits.Load() != 0 {
		t.Fatalf("with no page: %d frames to the later page, %d requests", n, hits.Load())
	}
}
