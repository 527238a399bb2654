package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/install"
)

// limitsConfig is "limits" of $JEAN2_HOME/config.json (docs/tools.md "Limits"): the
// host's per-worker and per-session limits and the shell's per-command ones. A missing or
// zero field keeps its default; a negative one turns that limit off.
type limitsConfig struct {
	MemoryMB        int `json:"memoryMB"`
	MaxTasks        int `json:"maxTasks"`
	MaxFileMB       int `json:"maxFileMB"`
	SessionTempMB   int `json:"sessionTempMB"`
	SessionMemoryMB int `json:"sessionMemoryMB"`
	SessionMaxTasks int `json:"sessionMaxTasks"`
	ShellMemoryMB   int `json:"shellMemoryMB"`
	ShellMaxTasks   int `json:"shellMaxTasks"`
}

// configLimits reads "limits" of config.json: the host's limits and the shell's (per
// command; its file size cap is the host's).
func configLimits(layout host.Layout) (hostLimits, shellLimits host.Limits, err error) {
	path := install.ConfigFile(layout)
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return host.Limits{}, host.Limits{}, nil
	case err != nil:
		return host.Limits{}, host.Limits{}, fmt.Errorf("read %s: %w", path, err)
	}
	var cfg struct {
		Limits limitsConfig `json:"limits"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return host.Limits{}, host.Limits{}, fmt.Errorf("%s: \"limits\": %w", path, err)
	}
	l := cfg.Limits
	hostLimits = host.Limits{MemoryMB: l.MemoryMB, MaxTasks: l.MaxTasks, MaxFileMB: l.MaxFileMB,
		SessionTempMB: l.SessionTempMB, SessionMemoryMB: l.SessionMemoryMB, SessionMaxTasks: l.SessionMaxTasks}
	shellLimits = host.Limits{MemoryMB: l.ShellMemoryMB, MaxTasks: l.ShellMaxTasks, MaxFileMB: l.MaxFileMB}
	return hostLimits, shellLimits, nil
}
