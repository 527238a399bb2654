package e2e_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jean2/jean2/schedule"
	"github.com/jean2/jean2/server"
	"github.com/jean2/jean2/store"
)

// The schedules page: a schedule added through the form (a bad cron refused with the
// server's words), shown with its next run; at its occurrence (a fake clock) the run is
// listed with its outcome and a link that opens the run's session. The page passes axe-core.
func TestSchedulesPage(t *testing.T) {
	clock := schedule.NewFakeClock(time.Date(2026, 1, 5, 7, 0, 0, 0, time.UTC))
	f := newFixtureWith(t, func(f *fixture, cfg *server.Config) {
		cfg.Schedules = server.ScheduleConfig{Clock: clock, Poll: 30 * time.Second}
	})
	var ws store.Workspace
	if code := f.api("POST", "/api/workspaces", map[string]any{"path": f.ws}, &ws); code != 201 {
		t.Fatalf("create the workspace: %d", code)
	}
	f.open("#/schedules")
	f.waitJS("the form", `document.querySelector("#sch-workspace option") !== null`)
	f.typeInto("#sch-name", "Morning summary")
	f.typeInto("#sch-prompt", "Summarize the project")
	f.typeInto("#sch-cron", "0 9 * *")
	f.eval(`(() => { document.querySelector("#sch-zone").value = "UTC"; return ""; })()`)
	f.click("#sch-add")
	f.waitText("#sch-error", "expected exactly 5 fields")
	f.typeInto("#sch-cron", " *")
	f.click("#sch-add")
	f.waitText(".schedule-card h3", "Morning summary")
	f.waitText(".schedule-card .schedule-next", "next run")
	if got := f.eval(`document.querySelector(".schedule-card .schedule-next").textContent`); !strings.Contains(got, "9:00") {
		t.Errorf("next run shown as %q, want 09:00 in UTC", got)
	}

	f.fake.Push(text("The project ", "is fine."))
	clock.Set(time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC))
	f.waitGo("the run's end", func() bool {
		var list struct {
			Schedules []struct{ Runs []store.ScheduleRun }
		}
		f.api("GET", "/api/schedules?workspace="+ws.ID, nil, &list)
		return len(list.Schedules) == 1 && len(list.Schedules[0].Runs) == 1 && list.Schedules[0].Runs[0].Status == "done"
	})
	f.click("#sch-refresh")
	f.waitText(".schedule-runs .run-done .run-outcome", "done")
	src := axeSource(t)
	f.axeCheck(src, "light schedules page with a run")
	if err := f.b.Do(10*time.Second, emulateScheme("dark")); err != nil {
		t.Fatal(err)
	}
	f.axeCheck(src, "dark schedules page with a run")
	f.click(".schedule-runs .run-done a")
	f.waitJS("the run's session", `location.hash.startsWith("#/s/") && document.querySelector(".session-view") !== null`)
	f.waitText(".message.user", "Summarize the project")
	f.waitText(".message.assistant", "The project is fine.")

	// On a phone the page's links scroll in the top bar, never the page, and Schedules is
	// reached from there.
	if err := f.b.Do(10*time.Second, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch)); err != nil {
		t.Fatal(err)
	}
	f.open("#/")
	f.noSideways("phone with the Schedules link")
	f.shot("phone-topbar-schedules")
	f.click(`.top-nav a[data-page="schedules"]`)
	f.waitText(".schedule-card h3", "Morning summary")
	f.noSideways("phone schedules page")
	f.shot("phone-schedules")
}
