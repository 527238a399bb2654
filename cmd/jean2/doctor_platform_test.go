package main

import (
	"strings"
	"testing"

	"github.com/jean2/jean2/sandbox"
)

// What doctor says of the system's confinement, decided from a Status alone so that the
// macOS and Windows answers are tested here on Linux.
func TestDoctorPlatformCheck(t *testing.T) {
	cases := []struct {
		st     sandbox.Status
		ok     bool
		status string
		says   []string
	}{
		{sandbox.Status{OS: "linux", Mode: sandbox.ModeAuto}, false, "", nil},
		{sandbox.Status{OS: "darwin", Mode: sandbox.ModeAuto, Seatbelt: true}, true, checkOK, []string{"/usr/bin/sandbox-exec is there", "Seatbelt profile"}},
		{sandbox.Status{OS: "darwin", Mode: sandbox.ModeAuto, SeatbeltError: "/usr/bin/sandbox-exec: no such file"}, true, checkWarn, []string{"cannot be confined", "no such file", "unconfined"}},
		{sandbox.Status{OS: "darwin", Mode: sandbox.ModeRequire, SeatbeltError: "/usr/bin/sandbox-exec: no such file"}, true, checkFail, []string{"require"}},
		{sandbox.Status{OS: "darwin", Mode: sandbox.ModeOff, SeatbeltError: "sandbox mode off"}, true, checkWarn, []string{"not confined"}},
		{sandbox.Status{OS: "windows", Mode: sandbox.ModeAuto}, true, checkFail, []string{"refuses to run tools", "JEAN2_SANDBOX=off", "WSL"}},
		{sandbox.Status{OS: "windows", Mode: sandbox.ModeRequire}, true, checkFail, []string{"refuses to run tools", "WSL"}},
		{sandbox.Status{OS: "windows", Mode: sandbox.ModeOff}, true, checkWarn, []string{"without OS confinement", "as you chose (JEAN2_SANDBOX=off)", "WSL", "ctx.fs"}},
		{sandbox.Status{OS: "windows", Mode: sandbox.ModeNode}, true, checkWarn, []string{"JEAN2_SANDBOX=node"}},
	}
	for _, c := range cases {
		got, ok := platformCheck(c.st)
		if ok != c.ok || got.Status != c.status {
			t.Errorf("%+v: got %v %+v", c.st, ok, got)
			continue
		}
		for _, w := range c.says {
			if !strings.Contains(got.Detail, w) {
				t.Errorf("%+v: %q does not say %q", c.st, got.Detail, w)
			}
		}
		// What the sandbox check says agrees: Windows without the choice cannot run tools.
		if _, err := c.st.Choose("node"); (err != nil) != (c.status == checkFail) {
			t.Errorf("%+v: Choose says %v but doctor says %s", c.st, err, got.Status)
		}
	}
}
