// Package harness owns the agent loop: a user's message starts a turn, and the turn is rounds
// of one model call each. The model's answer streams into the store (messages and parts, as
// they arrive) and out to clients as events; the tool calls it made run through the host,
// each with its own stoppable context, the turn's ledger and the session's facts; then the
// next round sends the transcript back. The calls decide whether the turn goes on, not the
// finish reason: an answer without calls ends the turn.
//
// Limits: a work budget (default 5 rounds that ran work; rounds made only of interactive
// calls, which wait on a person, do not spend it) and a hard ceiling (default 25 rounds).
//
// What the model is sent is built from the store before every call and repaired on the way
// so that each tool call has exactly one result: a call left without one (the server
// stopped, the turn was stopped) gets a sealed error result, which is also saved on its
// part; duplicate results are dropped. A visualization never reaches the model.
//
// At the turn's end the ledger of what its tools changed (plus, with undo snapshots, what
// anything else changed on disk) is filed under the turn's last assistant message, which is
// what "Changed N files" and "Restore to here" read.
//
// Crash safety: everything a client was told is in the store first. A turn's writes are
// grouped into few commits, each carrying the events that announce it (one transaction with
// a BatchPublisher): the user's message with turn.started; each flush of an answer (50 ms
// after something first waited, or at its end); each group of calls' start; the turn's end.
// A call's outcome goes with the next of these. New seals what a killed server left
// half-written (messages still streaming, calls pending or running, turns still open), so
// the session goes on.
//
// Events (payloads in events.go) are published through a Publisher, the hub in the server.
// docs/harness.md tells the whole story.
package harness
