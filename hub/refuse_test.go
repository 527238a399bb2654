package hub

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jean2/jean2/tool"
)

// A client refuses an ask: the tool gets a RefusedByClientError (errors.Is
// tool.ErrNoOneToAsk) at once, ask.resolved says "refused" with the reason, and the ask is
// gone: a later answer or refusal finds nothing.
func TestAskRefusedByClient(t *testing.T) {
	f := newFixture(t, Options{})
	sub := f.attach()
	ctx := context.Background()
	got := f.askAsync(ctx, selectAsk())
	p := pendingOf(t, sub)

	if err := f.hub.Refuse(ctx, f.sid, p.ID, "no --answers entry covers it"); err != nil {
		t.Fatal(err)
	}
	a := wait(t, got)
	var re *RefusedByClientError
	if !errors.As(a.err, &re) || !errors.Is(a.err, tool.ErrNoOneToAsk) || re.Tool != "deploy" ||
		!strings.Contains(a.err.Error(), `single_select ask "Which environment?" of tool deploy: refused by the client: no --answers entry covers it`) {
		t.Fatalf("the tool got %s, %v", a.value, a.err)
	}
	r := resolvedOf(t, sub)
	if r.AskID != p.ID || r.Outcome != OutcomeRefused || r.Answer != nil || !strings.Contains(r.Error, "refused by the client") {
		t.Fatalf("resolved %+v", r)
	}
	if err := f.hub.Answer(ctx, f.sid, p.ID, json.RawMessage(`"prod"`)); !errors.Is(err, ErrNoSuchAsk) {
		t.Fatalf("an answer after the refusal: %v", err)
	}
	if err := f.hub.Refuse(ctx, f.sid, p.ID, ""); !errors.Is(err, ErrNoSuchAsk) {
		t.Fatalf("a second refusal: %v", err)
	}
	if err := f.hub.Refuse(ctx, "ses_unknown", p.ID, ""); !errors.Is(err, ErrNoSuchAsk) {
		t.Fatalf("a refusal in an unknown session: %v", err)
	}
}
