//go:build !linux

package sandbox

import "errors"

// Pids caps the tasks of workers with cgroups, which exist only on Linux.
type Pids struct{}

// NewPids reports that there are no cgroups here.
func NewPids() (*Pids, error) { return nil, errors.New("cgroups exist only on Linux") }

func (p *Pids) Dir() string  { return "" }
func (p *Pids) Release(int)  {}
func (p *Pids) Close() error { return nil }
