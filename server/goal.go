package server

import (
	"errors"
	"net/http"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/store"
)

// goalRoutes adds the routes of goal mode (docs/harness.md, "Goal mode").
func (s *Server) goalRoutes(route func(string, handlerFunc)) {
	route("GET /api/sessions/{id}/goal", s.getGoal)
	route("PUT /api/sessions/{id}/goal", s.putGoal)
	route("DELETE /api/sessions/{id}/goal", s.deleteGoal)
}

type goalBody struct {
	Condition string `json:"condition"`
	MaxTurns  int    `json:"maxTurns"`
	// Start, when the session is idle, starts a turn towards the goal at once (a message
	// marked as jean2's stating it); otherwise the next turn is the first judged.
	Start bool `json:"start"`
}

func (s *Server) getGoal(w http.ResponseWriter, r *http.Request) error {
	ses, err := s.session(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	g, err := s.harness.Goal(r.Context(), ses.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"goal": g})
	return nil
}

func (s *Server) putGoal(w http.ResponseWriter, r *http.Request) error {
	var b goalBody
	if err := decodeBody(w, r, &b); err != nil {
		return err
	}
	ses, err := s.session(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	g, err := s.harness.SetGoal(r.Context(), ses.ID, b.Condition, b.MaxTurns)
	if errors.Is(err, harness.ErrBadInput) {
		return badRequest("%v", err)
	}
	if err != nil {
		return err
	}
	out := map[string]any{"goal": g}
	if b.Start && !s.harness.Running(ses.ID) {
		started := s.gate.starting()
		turn, err := s.harness.Start(r.Context(), ses.ID, harness.Input{Text: harness.GoalContinuePrefix + "Work towards this goal: " + g.Condition})
		started()
		switch {
		case errors.Is(err, store.ErrNotFound):
			return notFound("session %s not found: it was deleted", ses.ID)
		case errors.Is(err, harness.ErrBusy):
			// A turn started meanwhile: its end is the first judged.
		case err != nil:
			return err
		default:
			out["turn"] = turn
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) deleteGoal(w http.ResponseWriter, r *http.Request) error {
	ses, err := s.session(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := s.harness.ClearGoal(r.Context(), ses.ID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
