package main

import (
	"bytes"
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// cli runs `jean2 ARGS…` in the workspace against the server at base.
func (c *chatEnv) cli(base string, args ...string) runResult {
	c.t.Helper()
	cmd := exec.Command(jean2Bin, args...)
	cmd.Env = c.env("JEAN2_SERVER="+base, "TZ=")
	cmd.Dir = c.ws
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	r := runResult{stdout: out.String(), stderr: errOut.String(), took: time.Since(start)}
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatal(err)
	}
	return r
}

// jean2 schedule adds, lists, shows, pauses, resumes and removes schedules on the running
// server; what the server refuses (a bad cron, an unknown zone) is a mistake in the command,
// said as the server says it.
func TestScheduleCLI(t *testing.T) {
	c := newChatEnv(t)
	base := c.serve()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"schedule", "add", "--cron", "0 9 * *", "--tz", "UTC", "hi"}, `cron "0 9 * *": expected exactly 5 fields`},
		{[]string{"schedule", "add", "--cron", "@daily", "--tz", "Mars/Olympus", "hi"}, `time zone "Mars/Olympus" is not an IANA zone name`},
		{[]string{"schedule", "add", "--cron", "@daily", "--tz", "UTC", "--allow", ":x", "hi"}, "names no tool"},
		{[]string{"schedule", "add", "--tz", "UTC", "hi"}, "needs --cron"},
		{[]string{"schedule", "pause"}, "takes one schedule id"},
	} {
		r := c.cli(base, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("jean2 %q: exit %d, stderr:\n%s", tc.args, r.code, r.stderr)
		}
	}
	r := c.cli(base, "schedule", "add", "--cron", "0 9 * * 1-5", "--tz", "Europe/Paris", "--name", "Standup notes",
		"--allow", "read-*", "--deny", "deploy", "--catch-up", "skip", "Write the standup notes")
	m := regexp.MustCompile(`schedule (sch_\w+) added: "0 9 \* \* 1-5" in Europe/Paris for .*; next run \d{4}-\d\d-\d\d 09:00 CES?T`).FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil {
		t.Fatalf("add: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := m[1]
	if r = c.cli(base, "schedule", "list"); r.code != 0 || !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, "Standup notes") {
		t.Fatalf("list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = c.cli(base, "schedule", "pause", id); r.code != 0 || !strings.Contains(r.stdout, "paused: no run until") {
		t.Fatalf("pause: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = c.cli(base, "schedule", "resume", id); r.code != 0 || !strings.Contains(r.stdout, "resumed; next run") {
		t.Fatalf("resume: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = c.cli(base, "schedule", "show", id)
	if r.code != 0 || !strings.Contains(r.stdout, `"allow":["read-*"]`) || !strings.Contains(r.stdout, "catch-up skip") || !strings.Contains(r.stdout, "no runs yet") {
		t.Fatalf("show: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = c.cli(base, "schedule", "rm", id); r.code != 0 {
		t.Fatalf("rm: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = c.cli(base, "schedule", "show", id); r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Fatalf("show after rm: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
