// Package host owns the live set of tools and the path of one call through it: Invoke
// validates the arguments, picks the tool version live now, hands the call a Context whose
// powers the host enforces (file system under policy, declared env only, asks through a
// broker with remembered grants, the ledger with undo data), runs it in its runtime, and
// turns what comes back into a normalized result, a text for the model (cut to a file when
// it overflows) and a visualization for people.
package host
