package server

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strings"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/store"
)

type imageBody struct {
	MediaType string `json:"mediaType"`
	Data      string `json:"data"` // base64
}

type turnBody struct {
	Text   string      `json:"text"`
	Images []imageBody `json:"images"`
	// Resources are resources of imported MCP servers to attach, read when the message is
	// sent (see readResources).
	Resources []resourceRef `json:"resources"`
	// Files are workspace files the person mentioned (@path), read when the message is sent
	// (see readMentions).
	Files []fileRef `json:"files"`
}

// input is the message of the body, checked.
func (b turnBody) input() (harness.Input, error) {
	in := harness.Input{Text: b.Text}
	if strings.TrimSpace(b.Text) == "" && len(b.Images) == 0 && len(b.Resources) == 0 && len(b.Files) == 0 {
		return in, badRequest("the message is empty: send some text, an image or a resource")
	}
	for i, img := range b.Images {
		switch img.MediaType {
		case "image/png", "image/jpeg", "image/gif", "image/webp":
		default:
			return in, badRequest("images[%d].mediaType %q is not image/png, image/jpeg, image/gif or image/webp", i, img.MediaType)
		}
		data, err := base64.StdEncoding.DecodeString(img.Data)
		if err != nil || len(data) == 0 {
			return in, badRequest("images[%d].data must be the image's bytes in base64", i)
		}
		in.Images = append(in.Images, provider.Image{MediaType: img.MediaType, Data: data})
	}
	return in, nil
}

// messageRequest reads a request that sends the person's message to a session (a turn, or
// a message queued for the running turn's end): the body, the session, the input, and a
// model that can be reached, refused before anything is stored.
func (s *Server) messageRequest(w http.ResponseWriter, r *http.Request) (store.Session, harness.Input, error) {
	var b turnBody
	if err := decodeBody(w, r, &b); err != nil {
		return store.Session{}, harness.Input{}, err
	}
	ses, err := s.session(r.Context(), r.PathValue("id"))
	if err != nil {
		return store.Session{}, harness.Input{}, err
	}
	in, err := b.input()
	if err != nil {
		return store.Session{}, harness.Input{}, err
	}
	if err := s.folderHere(r.Context(), ses); err != nil {
		return store.Session{}, harness.Input{}, err
	}
	if _, _, err := s.providers.Model(r.Context(), ses.Provider, ses.Model); err != nil {
		return store.Session{}, harness.Input{}, errorf(http.StatusBadRequest, codeNoProvider, "%v", err)
	}
	// Read last: a message refused for another reason costs no MCP server a read.
	if in.Resources, err = s.readResources(r.Context(), ses, b.Resources); err != nil {
		return store.Session{}, harness.Input{}, err
	}
	files, err := s.readMentions(r.Context(), ses, b.Files)
	if err != nil {
		return store.Session{}, harness.Input{}, err
	}
	in.Resources = append(in.Resources, files...)
	return ses, in, nil
}

func (s *Server) startTurn(w http.ResponseWriter, r *http.Request) error {
	ses, in, err := s.messageRequest(w, r)
	if err != nil {
		return err
	}
	// A delete of the session waits until the harness has claimed it (see gate); one that
	// came first leaves the session gone, and Start says so.
	started := s.gate.starting()
	turn, err := s.harness.Start(r.Context(), ses.ID, in)
	started()
	switch {
	case errors.Is(err, store.ErrNotFound):
		return notFound("session %s not found: it was deleted", ses.ID)
	case errors.Is(err, harness.ErrBusy):
		return busyError(ses.ID, err, "wait for turn.finished or stop it")
	case errors.Is(err, harness.ErrNoAgent):
		return badRequest("%v", err)
	case errors.Is(err, harness.ErrClosed):
		return errorf(http.StatusServiceUnavailable, codeUnavailable, "the server is shutting down")
	case err != nil:
		return err
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"turn": turn})
	return nil
}

func (s *Server) stopTurn(w http.ResponseWriter, r *http.Request) error {
	ses, err := s.session(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	stopped, instance, err := s.stop(r.Context(), ses.ID)
	if err != nil {
		return err
	}
	out := map[string]any{"stopped": stopped}
	if s.node != nil && instance != "" {
		out["instance"] = instance // where the turn ran
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
