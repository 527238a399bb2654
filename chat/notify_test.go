package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/store"
)

// A turn that ran over 10 s rings the terminal when it ends (BEL and OSC 9 naming the
// session and how it ended), as does a question asked late in such a turn; a short turn, a
// stopped one, or a chat whose output is no terminal rings nothing. The session's title
// cannot end the sequence.
func TestChatRingsWhenALongTurnEnds(t *testing.T) {
	run := func(notify bool, took time.Duration, reason string, ask bool) string {
		var out bytes.Buffer
		u := newChatUI(Options{Stdout: &out, Notify: notify}, nil, session{Session: store.Session{ID: "ses_1", Title: "Fix\x1b]0;owned\a the build"}}, store.Workspace{Path: "/ws"}, false)
		now := time.Unix(1000, 0)
		u.clock.now = func() time.Time { return now }
		ev := func(typ, payload string) {
			u.handleEvent(store.Event{SessionID: "ses_1", Seq: 1, Type: typ, Payload: json.RawMessage(payload)})
		}
		ev("turn.started", `{"turnId":"t1","userMessageId":"m1"}`)
		now = now.Add(took)
		if ask {
			u.notifyAsk() // the ask's prompt itself needs a live stream; the ring comes first
		}
		ev("turn.finished", `{"turnId":"t1","reason":"`+reason+`","messageId":"m2"}`)
		return out.String()
	}
	const bell = "\a\x1b]9;"
	got := run(true, 11*time.Second, "done", false)
	if want := bell + `jean2: the turn finished (Fix\u001b]0;owned\u0007 the build)` + "\a"; !strings.Contains(got, want) {
		t.Errorf("a long turn's end printed %q, want it to contain %q", got, want)
	}
	if got := run(true, 11*time.Second, "error", false); !strings.Contains(got, bell+"jean2: the turn failed") {
		t.Errorf("a long failed turn printed %q", got)
	}
	if got := run(true, 11*time.Second, "done", true); strings.Count(got, bell) != 2 || !strings.Contains(got, "a question waits for your answer") {
		t.Errorf("a late question and the end printed %q, want two rings", got)
	}
	for name, got := range map[string]string{
		"short turn":  run(true, 9*time.Second, "done", true),
		"stopped":     run(true, time.Minute, "stopped", false),
		"no terminal": run(false, time.Minute, "done", true),
	} {
		if strings.Contains(got, "\a") {
			t.Errorf("%s rang the terminal: %q", name, got)
		}
	}
}

// desktopRecorder is a desktop that shows what it is given, or fails.
type desktopRecorder struct {
	shown []string
	fail  error
}

func (d *desktopRecorder) Notify(_ context.Context, title, body string) error {
	if d.fail != nil {
		return d.fail
	}
	d.shown = append(d.shown, title+": "+body)
	return nil
}

// With a desktop, a long turn's end is shown there and the terminal only gets the bell (no
// OSC 9, which would show it twice); a desktop that fails is said once, and the terminal's
// OSC 9 takes over for that and later notifications.
func TestChatNotifiesTheDesktop(t *testing.T) {
	run := func(d *desktopRecorder) string {
		var out bytes.Buffer
		u := newChatUI(Options{Stdout: &out, Notify: true, Desktop: d}, nil, session{Session: store.Session{ID: "ses_1", Title: "Fix the build"}}, store.Workspace{Path: "/ws"}, false)
		now := time.Unix(1000, 0)
		u.clock.now = func() time.Time { return now }
		for _, turn := range []string{"t1", "t2"} {
			u.handleEvent(store.Event{SessionID: "ses_1", Seq: 1, Type: "turn.started", Payload: json.RawMessage(`{"turnId":"` + turn + `","userMessageId":"m1"}`)})
			now = now.Add(time.Minute)
			u.handleEvent(store.Event{SessionID: "ses_1", Seq: 2, Type: "turn.finished", Payload: json.RawMessage(`{"turnId":"` + turn + `","reason":"done","messageId":"m2"}`)})
		}
		return out.String()
	}
	d := &desktopRecorder{}
	got := run(d)
	if strings.Contains(got, "\x1b]9;") || strings.Count(got, "\a") != 2 || len(d.shown) != 2 || d.shown[0] != "jean2: the turn finished (Fix the build)" {
		t.Errorf("with a desktop: printed %q, shown %q", got, d.shown)
	}
	d = &desktopRecorder{fail: errors.New("desktop notification: no notification service on the session bus")}
	got = run(d)
	if strings.Count(got, "no notification service") != 1 || strings.Count(got, "\a\x1b]9;jean2: the turn finished") != 2 {
		t.Errorf("with a failing desktop: printed %q", got)
	}
}
