package server

import (
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/jean2/jean2/skills"
)

// skillsView is what GET /api/skills and GET /api/workspaces/{id}/skills answer: every
// skill, usable or broken (with its error), and the folders they are read from.
type skillsView struct {
	Skills  []skills.Skill `json:"skills"`
	Folders []string       `json:"folders"`
	// Broken counts the skills listed with an error.
	Broken int `json:"broken"`
}

func newSkillsView(home, workspace string, set skills.Set) skillsView {
	v := skillsView{Skills: set.Skills, Folders: []string{}}
	if v.Skills == nil {
		v.Skills = []skills.Skill{}
	}
	for _, f := range skills.Folders(home, workspace) {
		v.Folders = append(v.Folders, f.Dir())
	}
	v.Broken = len(set.Broken())
	return v
}

// listSkills is GET /api/skills: the skills of $JEAN2_HOME/skills, which every workspace
// has.
func (s *Server) listSkills(w http.ResponseWriter, r *http.Request) error {
	home := s.cfg.Host.Layout.Home
	writeJSON(w, http.StatusOK, newSkillsView(home, "", s.harness.Skills("")))
	return nil
}

// listWorkspaceSkills is GET /api/workspaces/{id}/skills: the skills a session of the
// workspace is offered at its next turn, $JEAN2_HOME's and the workspace's own.
func (s *Server) listWorkspaceSkills(w http.ResponseWriter, r *http.Request) error {
	ws, err := s.db.Workspace(r.Context(), r.PathValue("id"))
	if err != nil {
		return storeErr(err, "workspace "+r.PathValue("id"))
	}
	writeJSON(w, http.StatusOK, newSkillsView(s.cfg.Host.Layout.Home, ws.Path, s.harness.Skills(ws.Path)))
	return nil
}

// skillNotices remembers, per workspace folder, the broken skills last reported, so a
// skill that breaks is reported once (a "skills.broken" event on the server's log and a
// warning in its log), and again when it is fixed or breaks differently — not at every
// turn.
type skillNotices struct {
	mu   sync.Mutex
	last map[string]string // workspace folder → its broken skills' paths and errors
}

// brokenSkill is one broken skill in a skills.broken event.
type brokenSkill struct {
	Name  string `json:"name"`
	Path  string `json:"path"`
	Scope string `json:"scope"`
	Error string `json:"error"`
}

// skillsRead is the harness's SkillsRead: it reports a change in a workspace's broken
// skills.
func (s *Server) skillsRead(workspace string, set skills.Set) {
	broken := []brokenSkill{}
	var key strings.Builder
	for _, sk := range set.Broken() {
		broken = append(broken, brokenSkill{Name: sk.Name, Path: sk.Dir, Scope: sk.Scope, Error: sk.Error})
		fmt.Fprintf(&key, "%s\x00%s\x00", sk.Dir, sk.Error)
	}
	n := &s.skillNotices
	n.mu.Lock()
	if n.last == nil {
		n.last = map[string]string{}
	}
	before, seen := n.last[workspace]
	n.last[workspace] = key.String()
	n.mu.Unlock()
	if before == key.String() && (seen || len(broken) == 0) {
		return
	}
	for _, b := range broken {
		s.log.Warn("a skill cannot be used", "skill", b.Name, "path", b.Path, "error", b.Error)
	}
	s.publishServer(s.ctx, "skills.broken", map[string]any{"workspace": workspace, "skills": broken})
}
