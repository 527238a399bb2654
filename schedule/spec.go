// Package schedule owns scheduled sessions: when a schedule's occurrences fall (cron and an
// IANA time zone), how an occurrence is claimed once across the instances sharing the
// database, what is done with the occurrences missed while jean2 was down, and the policy
// that answers a run's asks. The Scheduler claims occurrences and hands each run to a
// Runner (the server), which sends the prompt as a turn of a new session.
package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // zones resolve the same on every machine, with or without a zoneinfo

	"github.com/robfig/cron/v3"
)

// parser reads the five standard fields (minute hour day-of-month month day-of-week) and
// the descriptors @yearly, @monthly, @weekly, @daily, @hourly.
func parser() cron.Parser {
	return cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
}

// Spec is a parsed cron expression in a time zone.
type Spec struct {
	Cron, TimeZone string
	sched          *cron.SpecSchedule
}

// ParseSpec reads a cron expression (5 fields, or @hourly, @daily …) and an IANA time
// zone ("Europe/Paris", "UTC"). The occurrences fall on the zone's wall clock: "0 9 * * *"
// in Europe/Paris is 09:00 in Paris in winter and in summer.
func ParseSpec(expr, zone string) (Spec, error) {
	expr = strings.TrimSpace(expr)
	zone = strings.TrimSpace(zone)
	if expr == "" {
		return Spec{}, errors.New(`cron is empty: give 5 fields (minute hour day-of-month month day-of-week, e.g. "0 9 * * 1-5") or @hourly, @daily, @weekly, @monthly, @yearly`)
	}
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return Spec{}, fmt.Errorf("cron %q: give the time zone as the schedule's time zone, not in the expression", expr)
	}
	if strings.HasPrefix(expr, "@every") {
		return Spec{}, fmt.Errorf("cron %q: @every is not supported: its times depend on when jean2 started; use 5 fields (\"*/15 * * * *\")", expr)
	}
	if zone == "" {
		return Spec{}, errors.New(`time zone is empty: give an IANA zone such as "Europe/Paris", "America/New_York" or "UTC"`)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil || strings.EqualFold(zone, "Local") {
		return Spec{}, fmt.Errorf("time zone %q is not an IANA zone name (such as \"Europe/Paris\" or \"UTC\")", zone)
	}
	s, err := parser().Parse(expr)
	if err != nil {
		return Spec{}, fmt.Errorf("cron %q: %v (5 fields: minute hour day-of-month month day-of-week, or @hourly, @daily …)", expr, err)
	}
	ss, ok := s.(*cron.SpecSchedule)
	if !ok {
		return Spec{}, fmt.Errorf("cron %q: not a calendar schedule", expr)
	}
	ss.Location = loc
	if ss.Next(time.Now()).IsZero() {
		return Spec{}, fmt.Errorf("cron %q never falls on a date (such as the 30th of February)", expr)
	}
	return Spec{Cron: expr, TimeZone: zone, sched: ss}, nil
}

// Next is the first occurrence strictly after t (zero when none falls within five years).
func (s Spec) Next(t time.Time) time.Time {
	return s.sched.Next(t).UTC()
}

// maxCount bounds how many occurrences Due walks one by one before it looks for the last
// one from closer to now.
const maxCount = 100_000

// Due returns the occurrences in [from, now]: how many (exact up to maxCount, "at least"
// past it) and the last one. from is itself an occurrence (a schedule's next_at).
func (s Spec) Due(from, now time.Time) (count int, last time.Time) {
	if from.After(now) {
		return 0, time.Time{}
	}
	last, count = from, 1
	for t := s.Next(from); !t.IsZero() && !t.After(now); t = s.Next(t) {
		last, count = t, count+1
		if count >= maxCount {
			// Every minute for months: the count is enough as "at least"; the last one is
			// found from a day (or a year) before now.
			for _, back := range []time.Duration{24 * time.Hour, 366 * 24 * time.Hour} {
				if l := s.lastBefore(now.Add(-back), now); !l.IsZero() {
					return count, l
				}
			}
			return count, last
		}
	}
	return count, last
}

// lastBefore is the last occurrence in (after, now], or zero when none falls there.
func (s Spec) lastBefore(after, now time.Time) time.Time {
	var last time.Time
	for t := s.Next(after); !t.IsZero() && !t.After(now); t = s.Next(t) {
		last = t
	}
	return last
}
