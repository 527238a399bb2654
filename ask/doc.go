// Package ask owns who answers a tool's ctx.ask and what is remembered of the answers.
//
// An ask reaches a tool.Asker: a person at a terminal (Terminal), a file of prepared answers
// (Answers), a rule for unattended runs (Policy), or nobody (Refuse). The host puts a Broker
// in front of that asker for each call: the Broker rejects malformed asks with an error the
// tool author can act on, answers a permission from the remembered Grants when one already
// covers it, records new grants for the duration the person chose, and checks that every
// answer has the shape the ask type promises the tool. The Broker also tells the host's file
// system layer (toolfs) which paths the call's granted permissions cover.
package ask
