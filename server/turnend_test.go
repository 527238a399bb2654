package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/store"
)

// sleepTool returns after 4 s.
const sleepTool = `export const definition = { name: 'sleep_it', description: 'Sleep 4 s.', inputSchema: { type: 'object' } };
export async function execute() {
  await new Promise((res) => setTimeout(res, 4000));
  return { success: true, result: 'slept' };
}
`

// PostgreSQL stopped mid-turn, while a tool runs: the turn cannot go on (its next round
// reads the store) and its end — the tool's result, turn.finished with the error — cannot be
// written then. It is written once the database is back (issue 29, point 1). Before, it was
// logged and forgotten: no turn.finished ever came, the tool's result was lost.
func TestTurnEndIsStoredOncePostgresIsBack(t *testing.T) {
	pg := startPostgres(t)
	f := newFixture(t)
	f.tools = map[string]string{"sleep-it": sleepTool}
	f.cfg.DatabaseURL = pg.URL("postgres")
	f.start()
	f.fake.Push(providertest.NewOpenAIStream("test-model").Text("Working.").ToolCall(0, "call_sleep", "sleep_it", `{}`).Finish("tool_calls").Done().Reply())
	_, ses := f.session()
	sock := f.dial("/api/sessions/"+ses.ID+"/ws", nil)
	var turn struct{ ID string }
	f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "wait"}, 202, &turn)
	for {
		ev, _ := sock.until("part.updated", 30*time.Second)
		if strings.Contains(string(ev.Payload), `"running"`) {
			break
		}
	}

	pg.Halt()
	// The tool ends while the database is down.
	time.Sleep(6 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := pg.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	msgs, fin := turnEndAfterOutage(t, f, ses.ID, turn.ID)
	if !strings.Contains(fmt.Sprint(msgs), "Working.") || !strings.Contains(fmt.Sprint(msgs), "slept") {
		t.Errorf("the answer streamed before the outage, or the tool's result, is lost: %+v", msgs)
	}
	if !strings.Contains(string(fin.Payload), `"reason":"error"`) || !strings.Contains(string(fin.Payload), "database") {
		t.Errorf("turn.finished does not say the database failed the turn: %s", fin.Payload)
	}
	// The session takes the next turn.
	f.fake.Push(providertest.OpenAIText("test-model", "Back."))
	f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "again"}, 202, nil)
}

// turnEndAfterOutage waits, once the database is back, for the turn's turn.finished (10 s
// at most) and checks that no message is left streaming; it returns the messages and the
// event.
func turnEndAfterOutage(t *testing.T, f *fixture, sessionID, turnID string) ([]store.Message, store.Event) {
	t.Helper()
	back := time.Now()
	var fin *store.Event
	for fin == nil && time.Since(back) < 45*time.Second {
		var page struct{ Events []store.Event }
		if status, body := f.request("GET", "/api/sessions/"+sessionID+"/events?after=0", nil, nil); status == 200 {
			if err := json.Unmarshal(body, &page); err != nil {
				t.Fatal(err)
			}
			for i, ev := range page.Events {
				if ev.Type == "turn.finished" && strings.Contains(string(ev.Payload), turnID) {
					fin = &page.Events[i]
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if fin == nil {
		t.Fatalf("45 s after the database came back, no turn.finished for turn %s", turnID)
	}
	took := time.Since(back)
	t.Logf("turn.finished stored %v after the database came back: %s", took.Round(time.Millisecond), fin.Payload)
	if took > 10*time.Second {
		t.Errorf("turn.finished came %v after the database was back, want it within 10 s", took)
	}
	var msgs struct{ Messages []store.Message }
	f.call("GET", "/api/sessions/"+sessionID+"/messages", nil, 200, &msgs)
	for _, m := range msgs.Messages {
		if m.Status == store.StatusStreaming {
			t.Errorf("message %s still streaming after its turn's end was stored", m.ID)
		}
	}
	return msgs.Messages, *fin
}

// PostgreSQL stopped while the model streams its answer: the answer's last writes wait with
// the turn's end, which is stored once the database is back — the whole answer, complete,
// not left "streaming", and turn.finished.
func TestStreamingAnswerIsSealedOncePostgresIsBack(t *testing.T) {
	pg := startPostgres(t)
	f := newFixture(t)
	f.cfg.DatabaseURL = pg.URL("postgres")
	f.start()
	f.fake.Push(providertest.NewOpenAIStream("test-model").Text("Half an ").Pause(4 * time.Second).Text("answer.").Finish("stop").Done().Reply())
	_, ses := f.session()
	sock := f.dial("/api/sessions/"+ses.ID+"/ws", nil)
	var turn struct{ ID string }
	f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "talk"}, 202, &turn)
	sock.until("message.created", 30*time.Second) // the user's
	sock.until("message.created", 30*time.Second) // the answer, streaming
	pg.Halt()
	time.Sleep(6 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := pg.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	msgs, fin := turnEndAfterOutage(t, f, ses.ID, turn.ID)
	if !strings.Contains(string(fin.Payload), `"reason":"done"`) {
		t.Errorf("turn.finished: %s, want done", fin.Payload)
	}
	if last := msgs[len(msgs)-1]; last.Content != "Half an answer." || last.Status != store.StatusComplete {
		t.Errorf("the answer after the outage: %s %q, want complete %q", last.Status, last.Content, "Half an answer.")
	}
}
