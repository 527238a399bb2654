package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/jean2/jean2/builtin"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/policy"
)

// shellSettings are the "shell" object of $JEAN2_HOME/config.json: how the shell built-in
// runs commands (docs/tools.md lists each). Absent fields keep the shell's defaults.
type shellSettings struct {
	Path       string            `json:"path"`
	Env        map[string]string `json:"env"`
	PassEnv    []string          `json:"passEnv"`
	ReadOnly   []string          `json:"readOnly"`
	Protected  []string          `json:"protected"`
	Bash       string            `json:"bash"`
	GitName    string            `json:"gitName"`
	GitEmail   string            `json:"gitEmail"`
	Timeout    string            `json:"timeout"`
	MaxTimeout string            `json:"maxTimeout"`
	MaxOutput  int               `json:"maxOutput"`
	MemoryMB   int               `json:"memoryMB"`
	MaxTasks   int               `json:"maxTasks"`
	MaxFileMB  int               `json:"maxFileMB"`
}

// options turns the settings into the shell's options, beside the host's sandbox and
// layout. A variable jean2 never passes to a command (its own, a provider's key, the
// loader's: policy.ReservedEnv, and the keys providers.json names) is an error rather
// than silently dropped, so the person learns why a command does not see it.
func (s shellSettings) options(layout host.Layout, sb host.SandboxOptions) (builtin.ShellOptions, error) {
	o := builtin.ShellOptions{Sandbox: sb, Layout: layout, Path: s.Path, Env: s.Env, PassEnv: s.PassEnv,
		Bash: s.Bash, GitName: s.GitName, GitEmail: s.GitEmail, MaxOutput: s.MaxOutput,
		Limits: host.Limits{MemoryMB: s.MemoryMB, MaxTasks: s.MaxTasks, MaxFileMB: s.MaxFileMB}}
	keys, err := policy.ProviderKeyNames(layout.Home)
	if err != nil {
		return o, err
	}
	names := slices.Clone(s.PassEnv)
	for name := range s.Env {
		names = append(names, name)
	}
	for _, name := range names {
		if len(policy.WithheldEnv([]string{name})) > 0 || slices.Contains(keys, name) {
			return o, fmt.Errorf(`shell: %q is not a variable jean2 passes to commands (its own JEAN2_*, a model provider's key or a loader variable); take it out of "env" and "passEnv"`, name)
		}
	}
	for field, paths := range map[string][]string{"readOnly": s.ReadOnly, "protected": s.Protected, "bash": {s.Bash}} {
		for _, p := range paths {
			if p != "" && !filepath.IsAbs(p) {
				return o, fmt.Errorf("shell: %s %q is not an absolute path", field, p)
			}
		}
	}
	o.ReadOnly, o.Protected = s.ReadOnly, s.Protected
	if o.Timeout, err = shellDuration("timeout", s.Timeout); err != nil {
		return o, err
	}
	if o.MaxTimeout, err = shellDuration("maxTimeout", s.MaxTimeout); err != nil {
		return o, err
	}
	return o, nil
}

// shellDuration reads a duration setting ("" is 0: the shell's default).
func shellDuration(field, v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf(`shell: %s %q is not a duration like "90s" or "5m"`, field, v)
	}
	return d, nil
}
