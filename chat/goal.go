package chat

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/internal/termtext"
)

// goalCommand is /goal: alone it shows the session's goal; "/goal off" clears it;
// "/goal [--turns N] CONDITION" sets it and, when no turn runs, starts working towards it.
func (u *chatUI) goalCommand(ctx context.Context, arg string) {
	arg = strings.TrimSpace(arg)
	path := "/api/sessions/" + url.PathEscape(u.ses.ID) + "/goal"
	switch arg {
	case "":
		var out struct{ Goal *harness.Goal }
		if err := u.api.Call(ctx, http.MethodGet, path, nil, &out); err != nil {
			u.println(u.st.red("jean2 chat: goal: " + err.Error()))
			return
		}
		if out.Goal == nil {
			u.println(u.st.dim("(no goal: /goal CONDITION sets one; jean2 goes on after each turn until a check of the condition says it is met)"))
			return
		}
		u.println(goalLine(*out.Goal))
		return
	case "off":
		if err := u.api.Call(ctx, http.MethodDelete, path, nil, nil); err != nil {
			u.println(u.st.red("jean2 chat: goal: " + err.Error()))
		}
		return
	}
	turns := 0
	if rest, ok := strings.CutPrefix(arg, "--turns "); ok {
		n, cond, _ := strings.Cut(strings.TrimSpace(rest), " ")
		v, err := strconv.Atoi(n)
		if err != nil || v < 1 {
			u.println(u.st.dim("(--turns takes a number of turns: /goal --turns 5 the tests pass)"))
			return
		}
		turns, arg = v, strings.TrimSpace(cond)
	}
	start := !u.running
	body := map[string]any{"condition": arg, "maxTurns": turns, "start": start}
	var out struct {
		Goal harness.Goal
		Turn *harness.TurnInfo
	}
	if err := u.api.Call(ctx, http.MethodPut, path, body, &out); err != nil {
		u.println(u.st.red("jean2 chat: goal: " + err.Error()))
		return
	}
	if out.Turn != nil {
		u.running = true
	}
}

// goalLine is how the chat shows a goal.
func goalLine(g harness.Goal) string {
	s := fmt.Sprintf("Goal (%s, %d of %d turns): %s", g.State, g.TurnsUsed, g.MaxTurns, termtext.Line(g.Condition))
	if g.Verdict != nil && g.Verdict.Reason != "" {
		s += " — " + termtext.Line(g.Verdict.Reason)
	}
	if g.Error != "" {
		s += " — " + termtext.Line(g.Error)
	}
	return s
}

// showGoal shows a goal.changed event.
func (u *chatUI) showGoal(p harness.GoalChanged) {
	if p.Goal == nil {
		u.println(u.st.dim("(goal cleared)"))
		return
	}
	switch p.Goal.State {
	case harness.GoalMet:
		u.println(u.st.green("✓ " + goalLine(*p.Goal)))
	case harness.GoalActive:
		u.println(u.st.cyan(goalLine(*p.Goal)))
	default:
		u.println(u.st.yellow(goalLine(*p.Goal)))
	}
}

// fromJean2 reports whether a user message is one jean2 sent itself (a goal's or a Stop
// hook's next turn).
func fromJean2(content string) bool {
	return strings.HasPrefix(content, harness.GoalContinuePrefix) || strings.HasPrefix(content, harness.HookContinuePrefix)
}
