package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/jean2/jean2/builtin"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/install"
	"github.com/jean2/jean2/tool"
)

// builtins returns the tools compiled into jean2 and the ones $JEAN2_HOME/config.json's
// "disabledBuiltins" turns off, for every command that makes a host (serve, chat, mcp,
// tools run and list): each offers the same tools. The shell runs its commands through the
// same sandbox as the host's workers, with config.json's "shell" settings.
func builtins(layout host.Layout, sb host.SandboxOptions) ([]tool.Tool, []string, error) {
	path := install.ConfigFile(layout)
	var cfg struct {
		DisabledBuiltins []string      `json:"disabledBuiltins"`
		Shell            shellSettings `json:"shell"`
	}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	default:
		if err := json.Unmarshal(data, &cfg); err != nil {
			return nil, nil, fmt.Errorf("%s is not valid JSON: %w", path, err)
		}
	}
	shell, err := cfg.Shell.options(layout, sb)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if shell.Limits.MaxFileMB == 0 {
		// One file's cap is the host's ("limits"."maxFileMB") unless "shell" sets its own.
		limits, err := configLimits(layout)
		if err != nil {
			return nil, nil, err
		}
		shell.Limits.MaxFileMB = limits.MaxFileMB
	}
	return builtin.Tools(builtin.Options{Shell: shell}), cfg.DisabledBuiltins, nil
}
