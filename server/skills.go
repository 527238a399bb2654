package server

import (
	"net/http"

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
