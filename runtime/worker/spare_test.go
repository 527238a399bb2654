package worker

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A process started ahead serves the first call: the call's worker was started before the
// call, and only one process was started.
func TestPrestartServesFirstCall(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "started")
	p := NewPool(Launcher{Kind: "go", Path: exe, Env: []string{"HELPER_MODE=ok", "HELPER_STARTED_FILE=" + marker}}, PoolOptions{Name: "helper"})
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	p.Prestart()
	if s := p.Stats(); s.Spare != 1 || s.Workers != 0 {
		t.Fatalf("after Prestart: %+v", s)
	}
	waitUntil(t, func() bool { _, err := os.Stat(marker); return err == nil })
	before := time.Now()
	raw, err := run(t, p, "c1", `{}`, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Result struct {
			StartedNs int64 `json:"startedNs"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if started := time.Unix(0, res.Result.StartedNs); !started.Before(before) {
		t.Fatalf("the first call's worker started %v after the call; want the process started ahead", started.Sub(before))
	}
	if s := p.Stats(); s.Spare != 0 || s.Workers != 1 || s.Started != 1 {
		t.Fatalf("after the call: %+v", s)
	}
}

// A process started ahead that no call takes is stopped after the idle timeout.
func TestPrestartIdleStopped(t *testing.T) {
	p := helperPool(t, "ok", PoolOptions{IdleTimeout: 50 * time.Millisecond})
	p.Prestart()
	waitUntil(t, func() bool { return p.Stats().Spare == 0 })
	if s := p.Stats(); s.Workers != 0 || s.Started != 0 {
		t.Fatalf("after the idle timeout: %+v", s)
	}
}

// Close stops a process started ahead (it returns once the process is gone: it waits for
// the process's monitor), and Prestart after Close starts nothing.
func TestPrestartClose(t *testing.T) {
	p := helperPool(t, "ok", PoolOptions{})
	p.Prestart()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	p.Prestart()
	if s := p.Stats(); s.Spare != 0 {
		t.Fatalf("after Close: %+v", s)
	}
}
