//go:build !linux

package sandbox

import (
	"errors"
	"os"
	"strconv"
)

// Pids caps the tasks of workers with cgroups, which exist only on Linux.
type Pids struct{}

// NewPids reports that there are no cgroups here.
func NewPids() (*Pids, error) { return nil, errors.New("cgroups exist only on Linux") }

func (p *Pids) Dir() string { return "" }
func (p *Pids) Release(int) {}
func (p *Pids) Group(string, int) (string, error) {
	return "", errors.New("cgroups exist only on Linux")
}
func (p *Pids) Remove(string) {}
func (p *Pids) Close() error  { return nil }

// Memory caps the memory of workers with cgroups, which exist only on Linux.
type Memory struct{}

// NewMemory reports that there are no cgroups here.
func NewMemory(*Pids) (*Memory, error) { return nil, errors.New("cgroups exist only on Linux") }

func (m *Memory) Dir() string { return "" }
func (m *Memory) Release(int) {}
func (m *Memory) Group(string, int) (string, error) {
	return "", errors.New("cgroups exist only on Linux")
}
func (m *Memory) Remove(string)        {}
func (m *Memory) Close() error         { return nil }
func (m *Memory) OutOfMemory(int) bool { return false }

// SweepStale has nothing to sweep where there are no cgroups.
func SweepStale() {}

// HostName names this process as a host.
func HostName() string { return "jean2-" + strconv.Itoa(os.Getpid()) }

// StaleHost cannot tell here: no name is taken for a dead host's.
func StaleHost(string) bool { return false }

// ReleaseWorker has no group to end where there are no cgroups.
func ReleaseWorker(string, int) {}

// OutOfMemoryIn reports no kill where there are no cgroups.
func OutOfMemoryIn(string, int) bool { return false }
