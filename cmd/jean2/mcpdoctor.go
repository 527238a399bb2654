package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/mcpclient"
	"github.com/jean2/jean2/sandbox"
)

// mcpDoctorCheck says how the stdio servers of $JEAN2_HOME/mcp.json will run: confined
// (what they may write and reach), or unconfined and why — "sandbox": false in their entry,
// the sandbox mode off, or a machine that cannot confine them (then they do not start).
// ok is false when the file lists no stdio server.
func mcpDoctorCheck(layout host.Layout, st sandbox.Status) (doctorCheck, bool) {
	file := filepath.Join(layout.Home, "mcp.json")
	cfg, err := mcpclient.Load(file)
	if err != nil {
		return doctorCheck{Name: "mcp servers", Status: checkWarn, Detail: err.Error()}, true
	}
	mech, chooseErr := st.Choose("mcp")
	canConfine := mech == sandbox.Landlock || mech == sandbox.Seatbelt
	var lines []string
	status := checkOK
	for _, s := range cfg.Servers {
		if s.Type != "stdio" {
			continue
		}
		var line string
		switch {
		case !s.Confined():
			status = checkWarn
			line = fmt.Sprintf(`%s: UNCONFINED ("sandbox": false in %s): runs as you`, s.Name, file)
		case st.Mode == sandbox.ModeOff:
			status = checkWarn
			line = s.Name + ": unconfined (sandbox mode off)"
		case chooseErr != nil || !canConfine:
			status = checkFail
			line = s.Name + `: not started, it cannot be confined here (set "sandbox": false in its entry to run it as you)`
		default:
			line = s.Name + ": " + s.Abilities()
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return doctorCheck{}, false
	}
	return doctorCheck{Name: "mcp servers", Status: status, Detail: strings.Join(lines, "; ")}, true
}
