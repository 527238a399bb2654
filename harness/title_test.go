package harness_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/provider/providertest"
)

// waitTitle waits until the fixture's session has a title and returns it.
func (f *fixture) waitTitle() string {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		s, err := f.db.Session(context.Background(), f.session.ID)
		if err != nil {
			f.t.Fatal(err)
		}
		if s.Title != "" {
			return s.Title
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.t.Fatal("the session was not named")
	return ""
}

// After the first turn of an untitled session the model (the configured title model) is
// asked for a title, which is cleaned, stored and announced with session.updated; later
// turns ask for none.
func TestSessionNamedAfterFirstTurn(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.h.SetTitles(true, "cheap-model")
	f.srv.Push(providertest.OpenAIText("gpt-test", "Sure, here is how to fix the login bug."),
		providertest.OpenAIText("cheap-model", "Title: \"Fix the login bug.\"\n(extra line)"))
	f.turn("The login page throws a 500 when the password is empty. Please fix it.")
	if got := f.waitTitle(); got != "Fix the login bug" {
		t.Fatalf("title %q", got)
	}
	reqs := f.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	var r oaiRequest
	if err := reqs[1].Decode(&r); err != nil || r.Model != "cheap-model" || len(r.Tools) != 0 ||
		!strings.Contains(text(r.Messages[1].Content), "password is empty") || !strings.Contains(text(r.Messages[1].Content), "login bug") {
		t.Fatalf("title request %s", reqs[1].Body)
	}
	f.waitEvent(harness.EventSessionUpdated, `"title":"Fix the login bug"`)

	f.srv.Push(providertest.OpenAIText("gpt-test", "again"))
	f.turn("second")
	time.Sleep(200 * time.Millisecond)
	if n := len(f.srv.Requests()); n != 3 {
		t.Fatalf("%d requests: a later turn asked for a title", n)
	}
}

// A model that fails to give a title leaves the first line of the message as the title; a
// session a person named is never renamed; with titles off nothing is asked.
func TestSessionTitleFallbackAndKept(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.h.SetTitles(true, "")
	f.srv.Push(providertest.OpenAIText("gpt-test", "ok"),
		providertest.OpenAIError(500, "server_error", "down"))
	f.turn("\n  Refactor the parser module  \nwith details")
	if got := f.waitTitle(); got != "Refactor the parser module" {
		t.Fatalf("fallback title %q", got)
	}

	g := newFixture(t, fixtureOptions{})
	g.h.SetTitles(true, "")
	s := g.session
	s.Title = "My own name"
	if _, err := g.db.UpdateSession(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	g.session.Title = "My own name"
	g.srv.Push(providertest.OpenAIText("gpt-test", "ok"))
	g.turn("hello")
	time.Sleep(200 * time.Millisecond)
	if n := len(g.srv.Requests()); n != 1 {
		t.Fatalf("%d requests for a named session", n)
	}

	h := newFixture(t, fixtureOptions{})
	h.srv.Push(providertest.OpenAIText("gpt-test", "ok"))
	h.turn("hello")
	time.Sleep(200 * time.Millisecond)
	if n := len(h.srv.Requests()); n != 1 {
		t.Fatalf("%d requests with titles off", n)
	}
}
