// Package tool is jean2's public Go SDK: what a tool is (Definition, Result), what one call
// knows about the call it serves (Context and its powers), the ask protocol's shapes, the
// turn's change Ledger, conversation SessionFacts, LinkCallSignal, and a Registry that
// validates and executes tools and never panics.
//
// Hosts build a Context per call; anything a host leaves out is filled with a detached
// default by NewContext, so a tool run from a command or a test records into nobody's turn.
// The package depends only on the standard library, the JSON Schema validator and the
// leaf package policy (path rules shared with the host).
package tool
