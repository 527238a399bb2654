package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// EventsOfTypes gives the session's last events of the types asked, oldest first.
func TestEventsOfTypes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		w := mustWorkspace(t, db, "/proj")
		s := mustSession(t, db, w.ID)
		var evs []NewEvent
		for i := range 6 {
			typ := []string{"ask.pending", "part.delta", "ask.resolved"}[i%3]
			evs = append(evs, NewEvent{Type: typ, Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
		}
		if _, err := db.AppendEvents(ctx, s.ID, evs...); err != nil {
			t.Fatal(err)
		}
		got, err := db.EventsOfTypes(ctx, s.ID, []string{"ask.pending", "ask.resolved"}, 3)
		if err != nil {
			t.Fatal(err)
		}
		var seen []string
		for _, e := range got {
			seen = append(seen, e.Type+string(e.Payload))
		}
		if want := `ask.resolved{"n":2} ask.pending{"n":3} ask.resolved{"n":5}`; strings.Join(seen, " ") != want {
			t.Fatalf("got %s, want %s", strings.Join(seen, " "), want)
		}
		if none, err := db.EventsOfTypes(ctx, s.ID, nil, 10); err != nil || len(none) != 0 {
			t.Fatalf("no types: %v %v", none, err)
		}
	})
}
