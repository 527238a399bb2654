// Package hub owns the live side of the agent server's session event logs and the asks
// waiting for a person.
//
// Events: every session has one numbered log in the store (session "" is the server's own).
// Publish appends events in one transaction and hands them to the session's live
// subscriptions; Publish calls of one session are serialized across the append and the
// hand-over, so each subscriber sees seq order with no gap. Subscribe(afterSeq) replays the
// stored events after afterSeq page by page and then continues with the live ones,
// dropping the overlap, so a client that reconnects with the last seq it saw misses nothing
// and sees nothing twice. Publish never waits for a reader: a subscription holds a bounded
// buffer of live events, and a reader that falls further behind is ended with
// ErrSlowSubscriber and reconnects from its last seq. While a subscription is still
// replaying, an overflow of that buffer is not held against it (it is behind by design): it
// reads the missed events from the store instead.
//
// Attached clients: each client (a WebSocket, the terminal chat) holds one subscription,
// and Attached counts them. That is how an ask knows whether someone can answer.
// Options.Unwatched hears of the events no subscription was handed, decided from the same
// snapshot of subscribers they were offered to (the server's push notifications).
//
// Asks: Asker(sessionID) is the tool.Asker (and ask.PermissionAsker) of the session's tool
// calls. With a client attached, an ask becomes a PendingAsk, announced as ask.pending and
// listed by Pending; the first answer of the right shape given to Answer wins, an answer of
// the wrong shape is refused while the ask stays pending, and the ask ends after AskTimeout
// or when the call's context is cancelled (the turn's Stop). Every ending is published as
// ask.resolved with outcome answered, timeout or cancelled. Pending asks belong to the
// session, not to a client: all clients going away does not cancel them, and a client that
// comes back finds them in Pending. With no client attached, Options.Unattended decides
// (by default ask.Policy{}, which denies permissions and refuses other asks) and the
// decision is published as ask.resolved with outcome policy, carrying the tool and the ask.
package hub
