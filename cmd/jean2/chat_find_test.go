package main

import (
	"bytes"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jean2/jean2/provider/providertest"
)

// jean2 chat and jean2 signin find the server running on their $JEAN2_HOME on whatever
// port it has (before, they looked only at :8742, and chat then started a second server on
// the same home, which failed: "undo store folder … in use by another jean2 process"); a
// second terminal joins the same server; a chat waits for a restarted server and goes on
// instead of ending; the address file goes when the server stops.
func TestChatFindsTheRunningServer(t *testing.T) {
	c := newChatEnv(t)
	base, stop := c.serveOn("0")
	file := filepath.Join(c.home, ServerFile)
	st, err := os.Stat(file)
	if err != nil {
		t.Fatalf("jean2 serve wrote no %s: %v", file, err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", file, st.Mode().Perm())
	}

	c.fake.Push(providertest.OpenAIText("test-model", "Hello from serve."), providertest.OpenAIText("test-model", "Hello again."), providertest.OpenAIText("test-model", "Still here."))
	p := c.chat(nil) // no --server, no JEAN2_SERVER
	p.send("hi")
	p.waitFor("Hello from serve.")
	if strings.Contains(p.screen.String(), "started one here") {
		t.Fatalf("jean2 chat started its own server beside the running one:\n%s", p.screen.String())
	}
	// A second terminal joins the same server.
	p2 := c.chat(nil)
	p2.send("and you?")
	p2.waitFor("Hello again.")

	signin := exec.Command(jean2Bin, "signin")
	signin.Env, signin.Dir = c.env(), c.ws
	var out, errb bytes.Buffer
	signin.Stdout, signin.Stderr = &out, &errb
	if err := signin.Run(); err != nil || !strings.HasPrefix(out.String(), base+"/") {
		t.Fatalf("jean2 signin: %v, %q, %s; want an address of %s", err, out.String(), errb.String(), base)
	}

	// The server restarts on its port: the chat waits and goes on.
	u, _ := url.Parse(base)
	stop()
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("%s is still there after the server stopped: %v", file, err)
	}
	p.waitFor("reconnecting")
	c.serveOn(u.Port())
	p.waitFor("connected to the server again")
	p.send("back?")
	p.waitFor("Still here.")
	p.send("/quit")
	if err := p.wait(); err != nil {
		t.Fatalf("jean2 chat ended with %v after the restart", err)
	}
}

// A server that comes back on another port (serve --port 0 again, or another port in its
// config) is found again through $JEAN2_HOME/server.json: the chat re-reads it while it
// reconnects (before, it retried only the address it had, and gave up after two minutes).
func TestChatFollowsTheServerToANewAddress(t *testing.T) {
	c := newChatEnv(t)
	first, stop := c.serveOn("0")
	c.fake.Push(providertest.OpenAIText("test-model", "Hello from the first."), providertest.OpenAIText("test-model", "Hello from the second."))
	p := c.chat([]string{"NO_COLOR=1"})
	p.send("hi")
	p.waitFor("Hello from the first.")
	p.waitFor("── done")

	stop()
	p.waitFor("reconnecting")
	second, _ := c.serveOn("0")
	if second == first {
		t.Fatalf("the server came back on the same address %s; the test needs another", first)
	}
	p.waitFor("connected to the server again")
	p.send("still there?")
	p.waitFor("Hello from the second.")
	var msgs struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	var list struct {
		Sessions []struct {
			ID string `json:"id"`
		} `json:"sessions"`
	}
	getJSON(t, c.token(), second+"/api/sessions", &list)
	if len(list.Sessions) != 1 {
		t.Fatalf("sessions on the new server: %+v", list.Sessions)
	}
	getJSON(t, c.token(), second+"/api/sessions/"+list.Sessions[0].ID+"/messages", &msgs)
	if n := len(msgs.Messages); n < 4 || msgs.Messages[2].Content != "still there?" {
		t.Fatalf("the message after the move did not reach the new server: %+v", msgs.Messages)
	}
	p.send("/quit")
	if err := p.wait(); err != nil {
		t.Fatalf("jean2 chat ended with %v after the move", err)
	}
}
