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
// host's per-worker and per-session limits (the shell's per-command ones are "shell"'s,
// shellSettings). A missing or zero field keeps its default; a negative one turns that
// limit off.
type limitsConfig struct {
	MemoryMB        int `json:"memoryMB"`
	MaxTasks        int `json:"maxTasks"`
	MaxFileMB       int `json:"maxFileMB"`
	SessionTempMB   int `json:"sessionTempMB"`
	SessionMemoryMB int `json:"sessionMemoryMB"`
	SessionMaxTasks int `json:"sessionMaxTasks"`
}

// configLimits reads "limits" of config.json: the host's limits.
func configLimits(layout host.Layout) (host.Limits, error) {
	path := install.ConfigFile(layout)
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return host.Limits{}, nil
	case err != nil:
		return host.Limits{}, fmt.Errorf("read %s: %w", path, err)
	}
	var cfg struct {
		Limits limitsConfig `json:"limits"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return host.Limits{}, fmt.Errorf("%s: \"limits\": %w", path, err)
	}
	l := cfg.Limits
	return host.Limits{MemoryMB: l.MemoryMB, MaxTasks: l.MaxTasks, MaxFileMB: l.MaxFileMB,
		SessionTempMB: l.SessionTempMB, SessionMemoryMB: l.SessionMemoryMB, SessionMaxTasks: l.SessionMaxTasks}, nil
}
