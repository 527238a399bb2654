package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/store"
)

// storeErr turns a store error into the API's: not found → 404, conflict → 409; anything
// else stays an internal error.
func storeErr(err error, what string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return notFound("%s not found", what)
	case errors.Is(err, store.ErrConflict):
		return errorf(http.StatusConflict, codeConflict, "%v", err)
	}
	return err
}

// checkFolder says what is wrong with p as a workspace folder or allowed path: it must be
// absolute and name an existing folder.
func checkFolder(field, p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", badRequest("%s is empty: give an absolute folder path such as /home/me/project", field)
	}
	if !filepath.IsAbs(p) {
		return "", badRequest("%s %q is not absolute: give the full path, such as /home/me/project", field, p)
	}
	p = filepath.Clean(p)
	fi, err := os.Stat(p)
	if err != nil {
		return "", badRequest("%s %s: %v", field, p, errors.Unwrap(err))
	}
	if !fi.IsDir() {
		return "", badRequest("%s %s is a file, not a folder", field, p)
	}
	return p, nil
}

// checkPlace is checkFolder, and refuses a folder tools must never be handed: the root, or
// one at or inside jean2's home, the tools folder or a credential folder of the user's
// (~/.ssh, ~/.aws, …). A workspace there would give every tool's file access (ctx.fs, the
// worker's own) what the sandbox keeps from tools, and $JEAN2_HOME holds the API token.
// Links are resolved first, so a link to ~/.ssh is refused too. A folder that holds the
// user's home is allowed with a warning: the protected folders inside stay closed, but
// everything else of the user's is open to tools.
func (s *Server) checkPlace(field, p string) (clean, warning string, err error) {
	if clean, err = checkFolder(field, p); err != nil {
		return "", "", err
	}
	real := policy.Real(clean)
	if real == "/" {
		return "", "", badRequest("%s %s is the whole file system: give the folder of a project", field, clean)
	}
	for _, x := range s.protectedFolders() {
		if policy.Within(real, policy.Real(x)) {
			return "", "", badRequest("%s %s is at or inside %s, which tools must never reach (jean2's own folder, the tools folder or a credential folder): give the folder of a project", field, clean, x)
		}
	}
	home := s.cfg.UserHome
	holdsHome := home != "" && policy.Within(policy.Real(home), real)
	if holdsHome {
		what := "is your home folder"
		if policy.Real(home) != real {
			what = "holds your home folder " + home
		}
		warning = fmt.Sprintf("%s %s %s: tools that run here can read and change all your files except jean2's own and the credential folders (~/.ssh, ~/.aws, …). A project's own folder is safer.", field, clean, what)
	}
	// jean2's own folders elsewhere (JEAN2_HOME=/opt/jean2): kept from tools, but say so.
	for _, x := range s.protectedFolders() {
		if policy.Within(policy.Real(x), real) && !(holdsHome && policy.Within(policy.Real(x), policy.Real(home))) {
			if warning == "" {
				warning = fmt.Sprintf("%s %s holds %s, which tools are kept out of; everything else in it is open to them. A project's own folder is safer.", field, clean, x)
			} else {
				warning += fmt.Sprintf(" It also holds %s, which tools are kept out of.", x)
			}
			break
		}
	}
	// The person chose this folder now: the host keeps where it leads, and refuses its calls
	// should a tool of an enclosing workspace replace it by a link later (host.pinRoots).
	if s.host != nil {
		s.host.PinFolder(clean)
	}
	return clean, warning, nil
}

// protectedFolders are the folders no workspace or allowed path may be at or inside.
func (s *Server) protectedFolders() []string {
	l := s.cfg.Host.Layout
	return policy.ProtectedPaths(s.cfg.UserHome, l.Home, l.Tools)
}

func (s *Server) checkPlaces(field string, ps []string) ([]string, []string, error) {
	out := make([]string, 0, len(ps))
	var warnings []string
	for i, p := range ps {
		c, w, err := s.checkPlace(fmt.Sprintf("%s[%d]", field, i), p)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, c)
		if w != "" {
			warnings = append(warnings, w)
		}
	}
	return out, warnings, nil
}

// workspaceView is a workspace as POST and PATCH answer it: with a warning for the person
// when its folders reach further than a project.
type workspaceView struct {
	store.Workspace
	Warning string `json:"warning,omitempty"`
}

func (s *Server) listWorkspaces(w http.ResponseWriter, r *http.Request) error {
	ws, err := s.db.ListWorkspaces(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"workspaces": ws})
	return nil
}

type workspaceBody struct {
	Name         *string   `json:"name"`
	Path         *string   `json:"path"`
	AllowedPaths *[]string `json:"allowedPaths"`
}

func (s *Server) createWorkspace(w http.ResponseWriter, r *http.Request) error {
	var b workspaceBody
	if err := decodeBody(w, r, &b); err != nil {
		return err
	}
	if b.Path == nil {
		return badRequest("give the workspace's folder as path (absolute)")
	}
	path, warning, err := s.checkPlace("path", *b.Path)
	if err != nil {
		return err
	}
	warnings := []string{}
	if warning != "" {
		warnings = append(warnings, warning)
	}
	ws := store.Workspace{Path: path, Name: filepath.Base(path), AllowedPaths: []string{}}
	if b.Name != nil && strings.TrimSpace(*b.Name) != "" {
		ws.Name = strings.TrimSpace(*b.Name)
	}
	if b.AllowedPaths != nil {
		var more []string
		if ws.AllowedPaths, more, err = s.checkPlaces("allowedPaths", *b.AllowedPaths); err != nil {
			return err
		}
		warnings = append(warnings, more...)
	}
	if _, err := s.db.WorkspaceByPath(r.Context(), path); err == nil {
		return errorf(http.StatusConflict, codeConflict, "a workspace for %s exists already", path)
	}
	ws, err = s.db.CreateWorkspace(r.Context(), ws)
	if err != nil {
		return storeErr(err, "workspace")
	}
	s.wsMCP.workspacesChanged()
	// Every client's list of workspaces follows (another tab, the terminal).
	s.publishServer(r.Context(), "workspaces.changed", map[string]any{})
	writeJSON(w, http.StatusCreated, workspaceView{Workspace: ws, Warning: strings.Join(warnings, " ")})
	return nil
}

func (s *Server) workspace(ctx context.Context, id string) (store.Workspace, error) {
	ws, err := s.db.Workspace(ctx, id)
	return ws, storeErr(err, "workspace "+id)
}

func (s *Server) getWorkspace(w http.ResponseWriter, r *http.Request) error {
	ws, err := s.workspace(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ws)
	return nil
}

func (s *Server) patchWorkspace(w http.ResponseWriter, r *http.Request) error {
	var b workspaceBody
	if err := decodeBody(w, r, &b); err != nil {
		return err
	}
	ws, err := s.workspace(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if b.Name != nil {
		ws.Name = strings.TrimSpace(*b.Name)
	}
	var warnings []string
	if b.Path != nil {
		var warning string
		if ws.Path, warning, err = s.checkPlace("path", *b.Path); err != nil {
			return err
		}
		if warning != "" {
			warnings = append(warnings, warning)
		}
	}
	if b.AllowedPaths != nil {
		var more []string
		if ws.AllowedPaths, more, err = s.checkPlaces("allowedPaths", *b.AllowedPaths); err != nil {
			return err
		}
		warnings = append(warnings, more...)
	}
	ws, err = s.db.UpdateWorkspace(r.Context(), ws)
	if err != nil {
		return storeErr(err, "workspace")
	}
	s.wsMCP.workspacesChanged()
	// Every client's list of workspaces follows (another tab, the terminal).
	s.publishServer(r.Context(), "workspaces.changed", map[string]any{})
	writeJSON(w, http.StatusOK, workspaceView{Workspace: ws, Warning: strings.Join(warnings, " ")})
	return nil
}

func (s *Server) deleteWorkspace(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := s.workspace(r.Context(), id); err != nil {
		return err
	}
	// Checked and deleted with no work starting in between (see gate); the sessions are
	// listed inside, so one made meanwhile is seen too.
	done := s.gate.deleting()
	sessions, err := s.idleSessions(r.Context(), id)
	if err == nil {
		err = storeErr(s.db.DeleteWorkspace(r.Context(), id), "workspace "+id)
	}
	done()
	if err != nil {
		return err
	}
	for _, ses := range sessions {
		s.forgetSession(r.Context(), id, ses.ID)
	}
	// Its terminals' shells end with it, before their folders go.
	if err := s.terms.closeWhere(func(t *liveTerminal) bool { return t.WorkspaceID == id }); err != nil {
		s.log.Warn("close the terminals of a deleted workspace", "workspace", id, "error", err)
	}
	if err := s.host.RemoveWorkspaceTemp(id); err != nil {
		s.log.Warn("remove the temporary folder of a deleted workspace's tool runs", "workspace", id, "error", err)
	}
	s.mcp.drop(id)
	s.wsMCP.workspacesChanged()
	// Every client's list of workspaces follows (another tab, the terminal).
	s.publishServer(r.Context(), "workspaces.changed", map[string]any{})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// idleSessions lists the workspace's sessions, or says why one of them (or a tool run in
// the workspace) keeps it from being deleted now. Call it under gate.deleting.
func (s *Server) idleSessions(ctx context.Context, workspaceID string) ([]store.Session, error) {
	if s.gate.busy(workspaceKey(workspaceID)) {
		return nil, errorf(http.StatusConflict, codeBusy, "a tool is running in workspace %s; wait for it to end", workspaceID)
	}
	sessions, err := s.db.ListSessions(ctx, workspaceID)
	if err != nil {
		return nil, err
	}
	for _, ses := range sessions {
		if err := s.sessionBusy(ses.ID); err != nil {
			var ae *apiError
			if errors.As(err, &ae) {
				ae.Message = "this workspace's " + ae.Message
			}
			return nil, err
		}
	}
	return sessions, nil
}
