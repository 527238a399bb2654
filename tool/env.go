package tool

import (
	"fmt"
	"sort"
)

// Env is the set of environment variables a tool may read: only those its definition names.
type Env struct{ vars map[string]string }

// NewEnv copies vars into an Env.
func NewEnv(vars map[string]string) Env {
	m := make(map[string]string, len(vars))
	for k, v := range vars {
		m[k] = v
	}
	return Env{vars: m}
}

// Get returns the variable and whether it is set.
func (e Env) Get(key string) (string, bool) {
	v, ok := e.vars[key]
	return v, ok
}

// Require returns the variable or the guide's error when it is not set.
func (e Env) Require(key string) (string, error) {
	if v, ok := e.vars[key]; ok {
		return v, nil
	}
	return "", fmt.Errorf("Required environment variable not set: %s", key)
}

// Keys lists the names that are set, sorted.
func (e Env) Keys() []string {
	keys := make([]string, 0, len(e.vars))
	for k := range e.vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Map returns a copy of the variables.
func (e Env) Map() map[string]string {
	m := make(map[string]string, len(e.vars))
	for k, v := range e.vars {
		m[k] = v
	}
	return m
}
