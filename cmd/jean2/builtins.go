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
// same sandbox as the host's workers.
func builtins(layout host.Layout, sb host.SandboxOptions) ([]tool.Tool, []string, error) {
	_, shellLimits, err := configLimits(layout)
	if err != nil {
		return nil, nil, err
	}
	tools := builtin.Tools(builtin.Options{Shell: builtin.ShellOptions{Sandbox: sb, Layout: layout, Limits: shellLimits}})
	path := install.ConfigFile(layout)
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return tools, nil, nil
	case err != nil:
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	var cfg struct {
		DisabledBuiltins []string `json:"disabledBuiltins"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, nil, fmt.Errorf("%s is not valid JSON: %w", path, err)
	}
	return tools, cfg.DisabledBuiltins, nil
}
