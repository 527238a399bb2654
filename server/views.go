package server

import (
	"bytes"
	"encoding/json"
	"math"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/store"
)

// Durations on the wire. A part's and a tool run's "duration" is a Go time.Duration, in
// nanoseconds. Clients want milliseconds, so every part and outcome the API sends also
// carries "durationMs" (whole milliseconds, rounded). "duration" stays as it is for the
// clients that read nanoseconds (jean2 chat decodes store.Part). store.Part marshals
// durationMs itself; events stored before it did get it added on the way out (viewEvent),
// and host.Outcome gets it from outcomeView.

// durationMs is d in whole milliseconds, rounded.
func durationMs(d time.Duration) int64 {
	return int64(math.Round(float64(d) / float64(time.Millisecond)))
}

// withDurationMs returns the JSON object obj with "durationMs" added from its "duration"
// (nanoseconds). An object that has no numeric duration, or has durationMs already (a
// store that sends it itself), comes back unchanged.
func withDurationMs(obj json.RawMessage) json.RawMessage {
	if !bytes.Contains(obj, []byte(`"duration"`)) || bytes.Contains(obj, []byte(`"durationMs"`)) {
		return obj
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(obj, &fields) != nil {
		return obj
	}
	var ns float64
	if raw, ok := fields["duration"]; !ok || json.Unmarshal(raw, &ns) != nil {
		return obj
	}
	ms, _ := json.Marshal(int64(math.Round(ns / float64(time.Millisecond))))
	fields["durationMs"] = ms
	out, err := json.Marshal(fields)
	if err != nil {
		return obj
	}
	return out
}

// withPartsDurationMs applies withDurationMs to each element of the JSON array parts.
func withPartsDurationMs(parts json.RawMessage) json.RawMessage {
	var list []json.RawMessage
	if json.Unmarshal(parts, &list) != nil {
		return parts
	}
	for i := range list {
		list[i] = withDurationMs(list[i])
	}
	out, err := json.Marshal(list)
	if err != nil {
		return parts
	}
	return out
}

// outcomeView is a tool run's outcome as the API sends it.
type outcomeView struct {
	host.Outcome
	DurationMs int64 `json:"durationMs"`
}

// viewEvent returns ev as the API sends it: the parts its payload carries (part.created,
// part.updated, message.created) get durationMs. Other events go out as stored.
func viewEvent(ev store.Event) store.Event {
	var key string
	switch ev.Type {
	case "part.created", "part.updated":
		key = "part"
	case "message.created":
		key = "message"
	default:
		return ev
	}
	if !bytes.Contains(ev.Payload, []byte(`"duration"`)) {
		return ev
	}
	var payload map[string]json.RawMessage
	if json.Unmarshal(ev.Payload, &payload) != nil || payload[key] == nil {
		return ev
	}
	if key == "part" {
		payload[key] = withDurationMs(payload[key])
	} else {
		var msg map[string]json.RawMessage
		if json.Unmarshal(payload[key], &msg) != nil || msg["parts"] == nil {
			return ev
		}
		msg["parts"] = withPartsDurationMs(msg["parts"])
		raw, err := json.Marshal(msg)
		if err != nil {
			return ev
		}
		payload[key] = raw
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return ev
	}
	ev.Payload = raw
	return ev
}

func viewEvents(evs []store.Event) []store.Event {
	for i := range evs {
		evs[i] = viewEvent(evs[i])
	}
	return evs
}
