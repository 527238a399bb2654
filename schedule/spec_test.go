package schedule

import (
	"strings"
	"testing"
	"time"
)

func mustSpec(t *testing.T, expr, zone string) Spec {
	t.Helper()
	s, err := ParseSpec(expr, zone)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Occurrences fall on the zone's wall clock, across a change of daylight saving time.
func TestSpecFollowsTheZonesClock(t *testing.T) {
	s := mustSpec(t, "0 9 * * *", "Europe/Paris")
	winter := s.Next(time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC)) // Sunday the 29th: summer time begins
	summer := s.Next(winter)
	if !winter.Equal(time.Date(2026, 3, 29, 7, 0, 0, 0, time.UTC)) || !summer.Equal(time.Date(2026, 3, 30, 7, 0, 0, 0, time.UTC)) {
		t.Fatalf("09:00 in Paris: %v then %v", winter, summer)
	}
	if s.Next(time.Date(2026, 1, 5, 7, 0, 0, 0, time.UTC)) != time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC) {
		t.Fatal("09:00 in Paris in January is not 08:00 UTC")
	}
	h := mustSpec(t, "@hourly", "Asia/Kolkata") // UTC+05:30: on the zone's hour, UTC's half hour
	if got := h.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); got != time.Date(2026, 1, 1, 0, 30, 0, 0, time.UTC) {
		t.Fatalf("@hourly in Kolkata: %v", got)
	}
}

// Due counts the occurrences in [from, now] and names the last one; a dense schedule missed
// for long is counted up to a bound and its last occurrence is still exact.
func TestSpecDue(t *testing.T) {
	s := mustSpec(t, "@hourly", "UTC")
	from := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	if n, last := s.Due(from, from.Add(5*time.Hour+30*time.Minute)); n != 6 || !last.Equal(from.Add(5*time.Hour)) {
		t.Fatalf("hourly over 5h30: %d, last %v", n, last)
	}
	if n, _ := s.Due(from, from.Add(-time.Second)); n != 0 {
		t.Fatalf("not due yet: %d", n)
	}
	m := mustSpec(t, "* * * * *", "UTC")
	now := from.Add(400 * 24 * time.Hour).Add(30 * time.Second)
	start := time.Now()
	n, last := m.Due(from, now)
	if n < maxCount || !last.Equal(now.Truncate(time.Minute)) {
		t.Fatalf("every minute for 400 days: %d, last %v", n, last)
	}
	t.Logf("every minute missed for 400 days: counted %d (bound), found the last in %v", n, time.Since(start).Round(time.Millisecond))
}

func TestParseSpecRefuses(t *testing.T) {
	for _, tc := range []struct{ expr, zone, want string }{
		{"", "UTC", "cron is empty"},
		{"0 9 * *", "UTC", "expected exactly 5 fields"},
		{"0 0 9 * * *", "UTC", "expected exactly 5 fields"},
		{"@every 1h", "UTC", "@every is not supported"},
		{"TZ=UTC 0 9 * * *", "UTC", "not in the expression"},
		{"0 0 30 2 *", "UTC", "never falls on a date"},
		{"0 9 * * *", "Mars/Olympus", "not an IANA zone name"},
		{"0 9 * * *", "Local", "not an IANA zone name"},
		{"0 9 * * *", "", "time zone is empty"},
	} {
		if _, err := ParseSpec(tc.expr, tc.zone); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSpec(%q, %q) = %v, want %q", tc.expr, tc.zone, err, tc.want)
		}
	}
}
